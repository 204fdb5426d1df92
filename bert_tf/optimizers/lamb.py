"""LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning") with the NVIDIA / MLPerf BERT conventions."""

import keras
from keras import ops

from bert_tf.compat.keras_internals import variable_index
from bert_tf.optimizers.weight_decay_exclusions import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY
from bert_tf.optimizers.weight_decay_optimizer import WeightDecayOptimizer


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(WeightDecayOptimizer):
    """LAMB: an Adam update with decoupled weight decay, scaled per variable by the trust ratio
    ||param|| / ||update||.

    As in the NVIDIA and MLPerf BERT reference code: bias-corrected moments (m / (1 - b1^t), v / (1 - b2^t)),
    update = m_hat / (sqrt(v_hat) + eps) + weight_decay_rate * param; the trust ratio is 1 when either norm is 0,
    and variables excluded from weight decay (LayerNorm, bias) are also excluded from layer adaptation (ratio 1);
    param -= lr * ratio * update. Gradients are clipped to a global norm first when `global_clipnorm` is given
    (NVIDIA's recipe uses 1.0). An option for large batches, never the default: the original BERT used
    `AdamWeightDecay`.

    Args:
        learning_rate: a float or a `LearningRateSchedule`.
        weight_decay_rate: 0.01 in the MLPerf/NVIDIA recipes.
        beta_1, beta_2, epsilon: 0.9, 0.999, 1e-6.
        exclude_from_weight_decay: regexes searched in the variable path; matching variables get neither decay nor
            layer adaptation.
        **kwargs: see `WeightDecayOptimizer`.

    Example:
    >>> optimizer = Lamb(learning_rate=WarmupPolynomialDecay(6e-3, 7038, 2000), global_clipnorm=1.0)  # doctest: +SKIP
    """

    SLOT_PREFIX = "lamb"

    def __init__(self, learning_rate=1e-3, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, name="lamb", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, exclude_from_weight_decay=exclude_from_weight_decay,
                         name=name, **kwargs)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        # With weight_decay_rate 0 the exclusions still decide layer adaptation, as in the reference code.
        self._adapted = [not self.is_excluded(v) for v in variables]

    def update_step(self, gradient, variable, learning_rate):
        gradient = ops.cast(gradient, variable.dtype)
        t = ops.cast(self.iterations + 1, variable.dtype)
        moments = self._moments(gradient, variable)
        _, _, next_m, next_v = moments
        m_hat = ops.divide(next_m, 1.0 - ops.power(self.beta_1, t))
        v_hat = ops.divide(next_v, 1.0 - ops.power(self.beta_2, t))
        update = ops.divide(m_hat, ops.add(ops.sqrt(v_hat), self.epsilon))
        if self._decays(variable):
            update = ops.add(update, ops.multiply(self.weight_decay_rate, variable))
        if self._adapted[variable_index(self, variable)]:
            param_norm = ops.sqrt(ops.sum(ops.square(variable)))
            update_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where((param_norm > 0) & (update_norm > 0),
                              param_norm / ops.maximum(update_norm, 1e-30), 1.0)
            update = ops.multiply(ratio, update)
        self._apply(variable, moments, update, learning_rate, decayed=True)

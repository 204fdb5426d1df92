"""LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning") with the NVIDIA / MLPerf BERT conventions."""

import keras
from keras import ops

from bert_tf.training.weight_decay_optimizer import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, WeightDecayOptimizer


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

    def __init__(self, learning_rate=1e-3, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, name="lamb", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate,
                         exclude_from_weight_decay=exclude_from_weight_decay, name=name, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._m = [self.add_variable_from_reference(v, name="lamb_m") for v in variables]
        self._v = [self.add_variable_from_reference(v, name="lamb_v") for v in variables]
        # With weight_decay_rate 0 the exclusions still decide layer adaptation, as in the reference code.
        self._adapted = [not self.is_excluded(v) for v in variables]

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        m, v = self._m[index], self._v[index]
        gradient = ops.cast(gradient, variable.dtype)
        lr = ops.cast(learning_rate, variable.dtype)
        t = ops.cast(self.iterations + 1, variable.dtype)
        next_m = ops.add(ops.multiply(self.beta_1, m), ops.multiply(1.0 - self.beta_1, gradient))
        next_v = ops.add(ops.multiply(self.beta_2, v), ops.multiply(1.0 - self.beta_2, ops.square(gradient)))
        m_hat = ops.divide(next_m, 1.0 - ops.power(self.beta_1, t))
        v_hat = ops.divide(next_v, 1.0 - ops.power(self.beta_2, t))
        update = ops.divide(m_hat, ops.add(ops.sqrt(v_hat), self.epsilon))
        if self._decays(variable):
            update = ops.add(update, ops.multiply(self.weight_decay_rate, variable))
        if self._adapted[index]:
            param_norm = ops.sqrt(ops.sum(ops.square(variable)))
            update_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where((param_norm > 0) & (update_norm > 0),
                              param_norm / ops.maximum(update_norm, 1e-30), 1.0)
            update = ops.multiply(ratio, update)
        self.assign(m, next_m)
        self.assign(v, next_v)
        self.assign_sub(variable, ops.multiply(lr, update))

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)
        return config


"""The original BERT optimizer, `AdamWeightDecayOptimizer`, as a Keras 3 optimizer."""

import keras
from keras import ops

from bert_tf.optimizers.weight_decay_exclusions import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY
from bert_tf.optimizers.weight_decay_optimizer import WeightDecayOptimizer


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(WeightDecayOptimizer):
    """Adam with decoupled weight decay exactly as the original's `AdamWeightDecayOptimizer` (its optimization.py).

    Per variable: m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; update = m / (sqrt(v) + eps), plus
    weight_decay_rate * param unless the variable's path matches `exclude_from_weight_decay`; param -= lr * update.
    No bias correction. Keras' `AdamW` differs (bias correction, eps 1e-7, decay applied separately), which is why
    this class exists. The original clipped all gradients to global norm 1.0 before the update: pass
    `global_clipnorm=1.0` (Keras clips the whole gradient list before `update_step`).

    Args:
        learning_rate: a float or a `LearningRateSchedule` (see `WarmupPolynomialDecay`).
        weight_decay_rate: 0.01 in the original pre-training and fine-tuning.
        beta_1, beta_2, epsilon: 0.9, 0.999, 1e-6 as in the original.
        exclude_from_weight_decay: regexes searched in the variable path ("LayerNorm", "layer_norm", "bias").
        **kwargs: see `WeightDecayOptimizer` (`aggregate_gradients`, `global_clipnorm`, `name`).

    Example:
    >>> optimizer = AdamWeightDecay(learning_rate=1e-4, weight_decay_rate=0.01, global_clipnorm=1.0)
    >>> model = BertPretrainer(BertConfig.preset("tiny"))
    >>> optimizer.build(model.trainable_variables)
    >>> [v.path for v in model.trainable_variables if not optimizer.uses_weight_decay(v)][:2]
    ['bert/embeddings/LayerNorm/gamma', 'bert/embeddings/LayerNorm/beta']
    """

    def __init__(self, learning_rate=1e-4, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, name="adam_weight_decay", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, exclude_from_weight_decay=exclude_from_weight_decay,
                         name=name, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        gradient = ops.cast(gradient, variable.dtype)
        moments = self._moments(gradient, variable)
        _, _, next_m, next_v = moments
        self._apply(variable, moments, ops.divide(next_m, ops.add(ops.sqrt(next_v), self.epsilon)), learning_rate)

"""The original BERT optimizer, `AdamWeightDecayOptimizer`, as a Keras 3 optimizer."""

import keras
from keras import ops

from bert_tf.training.weight_decay_optimizer import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, WeightDecayOptimizer


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(WeightDecayOptimizer):
    """Adam with decoupled weight decay exactly as the original `optimization.AdamWeightDecayOptimizer`.

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
        super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate,
                         exclude_from_weight_decay=exclude_from_weight_decay, name=name, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        # The original's slot names: `<param>/adam_m` and `<param>/adam_v`.
        self._m = [self.add_variable_from_reference(v, name="adam_m") for v in variables]
        self._v = [self.add_variable_from_reference(v, name="adam_v") for v in variables]

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        m, v = self._m[index], self._v[index]
        gradient = ops.cast(gradient, variable.dtype)
        lr = ops.cast(learning_rate, variable.dtype)
        next_m = ops.add(ops.multiply(self.beta_1, m), ops.multiply(1.0 - self.beta_1, gradient))
        next_v = ops.add(ops.multiply(self.beta_2, v), ops.multiply(1.0 - self.beta_2, ops.square(gradient)))
        update = ops.divide(next_m, ops.add(ops.sqrt(next_v), self.epsilon))
        if self._decays(variable):
            update = ops.add(update, ops.multiply(self.weight_decay_rate, variable))
        self.assign(m, next_m)
        self.assign(v, next_v)
        self.assign_sub(variable, ops.multiply(lr, update))

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)
        return config

"""What the original AdamWeightDecay and LAMB share: decoupled weight decay with name-based exclusions, and
gradients that the training loop has already averaged across replicas."""

import re

import keras
from keras import ops

from bert_tf.compat.keras_internals import variable_index
from bert_tf.optimizers.weight_decay_exclusions import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY


class WeightDecayOptimizer(keras.optimizers.Optimizer):
    """Base of `AdamWeightDecay` and `Lamb`: decoupled weight decay (`update += weight_decay_rate * param`) on the
    variables whose full path (`bert/encoder/layer_0/attention/output/LayerNorm/gamma`) matches none of the
    exclusion regexes, decided once per variable when the optimizer is built.

    Keras' own `weight_decay` argument is not used: it matches the short variable name (`gamma`), not the TF1
    path the original's regexes were written for, and it decays before the update instead of inside it.

    Args:
        learning_rate: a float or a `LearningRateSchedule`.
        weight_decay_rate: the decay coefficient (0.01 in the original).
        exclude_from_weight_decay: regexes; a variable whose path matches one is not decayed.
        aggregate_gradients: True (Keras' behaviour) sums gradients across replicas inside `apply`. The
            pre-training loop passes False: it averages the gradients across replicas itself so that global-norm
            clipping sees the averaged gradient, and a second sum would double-count them.
        **kwargs: passed to `keras.optimizers.Optimizer` (e.g. `global_clipnorm=1.0`, `name`).
    """

    # The names of the two moment slots: `<param>/<prefix>_m` and `<param>/<prefix>_v`.
    SLOT_PREFIX = "adam"

    def __init__(self, learning_rate, weight_decay_rate=0.0,
                 exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, aggregate_gradients=True, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-6, **kwargs):
        if kwargs.get("weight_decay") is not None:
            raise ValueError("Pass weight_decay_rate (the original's decoupled decay), not Keras' weight_decay.")
        if weight_decay_rate < 0:
            raise ValueError(f"weight_decay_rate={weight_decay_rate} must be >= 0.")
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.exclude_from_weight_decay_patterns = tuple(exclude_from_weight_decay or ())
        self.aggregate_gradients = bool(aggregate_gradients)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def is_excluded(self, variable):
        """Whether one of the `exclude_from_weight_decay` regexes matches the variable's path."""
        name = variable_path(variable)
        return any(re.search(pattern, name) for pattern in self.exclude_from_weight_decay_patterns)

    def uses_weight_decay(self, variable):
        """The original `_do_use_weight_decay`: False when the rate is 0 or a regex matches the variable's path."""
        return bool(self.weight_decay_rate) and not self.is_excluded(variable)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._decayed = [self.uses_weight_decay(v) for v in variables]
        self._m = [self.add_variable_from_reference(v, name=f"{self.SLOT_PREFIX}_m") for v in variables]
        self._v = [self.add_variable_from_reference(v, name=f"{self.SLOT_PREFIX}_v") for v in variables]

    def _moments(self, gradient, variable):
        """(m, v, next_m, next_v) of Adam's moment update for `variable`; `_apply` stores them."""
        index = variable_index(self, variable)
        m, v = self._m[index], self._v[index]
        next_m = ops.add(ops.multiply(self.beta_1, m), ops.multiply(1.0 - self.beta_1, gradient))
        next_v = ops.add(ops.multiply(self.beta_2, v), ops.multiply(1.0 - self.beta_2, ops.square(gradient)))
        return m, v, next_m, next_v

    def _apply(self, variable, moments, update, learning_rate, decayed=False):
        """Adds the decoupled weight decay to `update` (unless `decayed`: the caller did), stores the moments and
        steps the variable."""
        m, v, next_m, next_v = moments
        if not decayed and self._decays(variable):
            update = ops.add(update, ops.multiply(self.weight_decay_rate, variable))
        self.assign(m, next_m)
        self.assign(v, next_v)
        self.assign_sub(variable, ops.multiply(ops.cast(learning_rate, variable.dtype), update))

    def _decays(self, variable):
        return self._decayed[variable_index(self, variable)]

    def _all_reduce_sum_gradients(self, grads_and_vars):
        # Overrides the TensorFlow backend's cross-replica sum inside `apply`; see `aggregate_gradients`.
        if self.aggregate_gradients:
            return super()._all_reduce_sum_gradients(grads_and_vars)
        return list(grads_and_vars)

    def get_config(self):
        config = super().get_config()
        config.update(weight_decay_rate=self.weight_decay_rate,
                      exclude_from_weight_decay=list(self.exclude_from_weight_decay_patterns),
                      aggregate_gradients=self.aggregate_gradients, beta_1=self.beta_1, beta_2=self.beta_2,
                      epsilon=self.epsilon)
        config.pop("weight_decay", None)
        return config


def variable_path(variable):
    """The full name of a Keras or tf.Variable without the ":0" suffix (the original's `_get_variable_name`)."""
    name = getattr(variable, "path", None) or variable.name
    return re.sub(r":\d+$", "", name)

"""`ReusableModule`: an object saved as a TF Hub "reusable SavedModel", which `hub.KerasLayer(trainable=True)`
(tf-keras) and `keras.layers.TFSMLayer` (Keras 3) train."""

import tensorflow as tf


class ReusableModule(tf.Module):
    """`__call__(inputs, training=False)` (dict in, dict out), traced for both values of `training` so dropout
    runs only when training, next to `variables`, `trainable_variables` and `regularization_losses`: the TF Hub
    reusable SavedModel convention.

    tf.Module computes `variables` and `trainable_variables` as read-only properties, which a SavedModel does
    not store; the convention needs them stored, so this class replaces the properties with plain attributes.

    Args:
        call: `call(inputs, training)` -> dict of tensors.
        input_specs: the structure of `inputs` as specs (e.g. a dict of `tf.TensorSpec`).
        variables: the tf.Variables `call` reads; `trainable_variables`: those fine-tuning updates.

    Example:
    >>> scale = tf.Variable(2.0)
    >>> module = ReusableModule(lambda inputs, training: {"y": scale * inputs["x"]},
    ...                         {"x": tf.TensorSpec([None], tf.float32)}, [scale], [scale])
    >>> module.__call__({"x": tf.constant([1.0])}, training=False)["y"].numpy()
    array([2.], dtype=float32)
    """

    variables = trainable_variables = regularization_losses = None

    def __init__(self, call, input_specs, variables, trainable_variables, name=None):
        super().__init__(name=name)
        self.variables = list(variables)
        self.trainable_variables = list(trainable_variables)
        self.regularization_losses = []

        def reusable_call(inputs, training=False):
            return call(inputs, training)

        self.__call__ = tf.function(reusable_call)
        for training in (False, True):
            self.__call__.get_concrete_function(input_specs, training=training)

"""`ReusableModule`: an object saved as a TF Hub "reusable SavedModel", which `hub.KerasLayer(trainable=True)`
(tf-keras) and `keras.layers.TFSMLayer` (Keras 3) train."""

import tensorflow as tf

from bert_tf.serving.serving_module import graph_function


class ReusableModule(tf.Module):
    """`__call__(inputs, training=False)` (dict in, dict out), traced for both values of `training` so dropout
    runs only when training, next to `variables`, `trainable_variables` and `regularization_losses`: the TF Hub
    reusable SavedModel convention.

    A restored function runs only the input types it was traced for, and anything else fails with "Could not find
    matching concrete function". Ids often come as int64 (tf.train.Example features, numpy's default), so every
    int32 input is also accepted as int64 and cast to int32 (saturating: an id beyond int32 stays out of range
    and fails the range checks instead of wrapping round to a valid one); `call` itself is traced once.

    tf.Module computes `variables` and `trainable_variables` as read-only properties, which a SavedModel does
    not store; the convention needs them stored, so this class replaces the properties with plain attributes.

    Args:
        call: `call(inputs, training)` -> dict of tensors: a Python function, or a `tf.function` that other entry
            points of the SavedModel call too (each then reuses its traces).
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

        int32_call = call if isinstance(call, tf.types.experimental.GenericFunction) else graph_function(call)

        def reusable_call(inputs, training=False):
            return int32_call(tf.nest.map_structure(_as_declared, inputs, input_specs), training)

        self.__call__ = graph_function(reusable_call)
        for specs in (input_specs, tf.nest.map_structure(_int64_variant, input_specs)):
            for training in (False, True):
                self.__call__.get_concrete_function(specs, training=training)


def _int64_variant(spec):
    return tf.TensorSpec(spec.shape, tf.int64, spec.name) if spec.dtype == tf.int32 else spec


def _as_declared(tensor, spec):
    return tf.saturate_cast(tensor, tf.int32) if spec.dtype == tf.int32 and tensor.dtype == tf.int64 else tensor

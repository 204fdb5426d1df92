"""`ServingModule`: the base of every SavedModel root this package writes (encoder, preprocessing, task models)."""

import functools

import tensorflow as tf

# How every function of a SavedModel this package writes is traced: without autograph. They are written with
# TensorFlow's control-flow ops (`tf.cond`, `tf.debugging.Assert`, ...), so nothing needs converting, and
# converting them and what they call (tensorflow-text's tokenizers) slowed every export (docs/measurements.md).
graph_function = functools.partial(tf.function, autograph=False)


class ServingModule(tf.Module):
    """A `tf.Module` whose tf.functions are saved as attributes (what Python users of `tf.saved_model.load` call)
    and whose `signature_functions()` are saved as signatures (what TF Serving and `saved_model_cli` run).

    Subclasses set `self.serving_default` (a tf.function with an input signature) and may add more signatures.

    Example:
    >>> class Doubler(ServingModule):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.serving_default = graph_function(lambda x: {"y": 2 * x},
    ...                                               input_signature=[tf.TensorSpec([None], tf.float32)])
    >>> sorted(Doubler().signature_functions())
    ['serving_default']
    """

    def signature_functions(self):
        """{signature name: tf.function} to pass to `tf.saved_model.save(..., signatures=)`."""
        return {"serving_default": self.serving_default}

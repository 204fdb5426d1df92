"""Keras internals the package uses, each with its reason (Keras only: the optimizers import this under JAX too).
See `bert_tf.compat` for the rules and `tests/test_compat.py` for the canaries."""


def variable_index(optimizer, variable):
    """The index of `variable` among the optimizer's variables, which is the index of its slots (moments).

    Why: Keras' optimizers keep their slots in lists indexed this way and every built-in optimizer looks them up
    with the private `_get_variable_index`; the public API has no per-variable lookup.

    Example:
    >>> import keras
    >>> optimizer = keras.optimizers.SGD()
    >>> variables = [keras.Variable(1.0), keras.Variable(2.0)]
    >>> optimizer.build(variables)
    >>> variable_index(optimizer, variables[1])
    1
    """
    return optimizer._get_variable_index(variable)

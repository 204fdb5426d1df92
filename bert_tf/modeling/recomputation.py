"""What the layers' custom gradients share: which dtypes recompute in the backward pass instead of keeping (16-bit
compute; float32 keeps automatic differentiation of the original ops, bit for bit), and the tie that makes XLA
really recompute there."""

import keras
from keras import ops

SIXTEEN_BIT = ("bfloat16", "float16")


def recomputes(x):
    """Whether a layer recomputes for `x`'s backward pass: under a 16-bit compute dtype.

    Example:
    >>> recomputes(ops.ones((2,), "bfloat16")), recomputes(ops.ones((2,), "float32"))
    (True, False)
    """
    return keras.backend.standardize_dtype(x.dtype) in SIXTEEN_BIT


def tied_to_backward(x, upstream):
    """`x` unchanged (unless the incoming gradient `upstream` starts with a NaN), as a value of the backward pass.

    A backward pass that recomputes from `x` what the forward pass computed from `x` gives XLA two identical
    computations: common-subexpression elimination merges them and keeps the forward's result alive until the
    backward pass, which is the memory the recomputation was meant to save. Adding 0 derived from `upstream` makes
    the recomputation depend on the backward pass, so it is neither merged nor hoisted (the device
    `tf.recompute_grad` uses to tie its recomputation to the incoming gradients). A NaN first element shifts `x` by 1
    (integer seeds included): the step's gradients are NaN then anyway.

    Example:
    >>> ops.convert_to_numpy(tied_to_backward(ops.ones((2,)), ops.zeros((3,)))).tolist()
    [1.0, 1.0]
    """
    return x + ops.cast(ops.isnan(ops.reshape(upstream, (-1,))[0]), x.dtype)

"""The fused attention kernel a run chooses for `BertSelfAttention` (docs/gpu_attention.md): a setting of where the
model runs, not of the model, so checkpoints, configs and exports are the same with or without one.

A kernel is an object with `applies(q)` (whether it can run on q [B, T, A, d] in the function being traced now) and
`kernel(q, k, v, lengths, scale)` -> context, q, k, v and the context [B, T, A, d], `lengths` int32 [B] (each row's
real tokens, which come first). `bert_tf.accelerators.cudnn_flash_attention.CudnnFlashAttention` is the one there is.
The layer takes it for plain rows and only where no attention-probability dropout applies; packed rows, and any call
where `applies(q)` is false, keep today's attention.

The kernel is set for the whole process, not per thread: MirroredStrategy traces each replica's step in a thread of
its own, and every replica must take the same attention.

Example:
>>> active_attention_kernel() is None
True
"""

import contextlib

# The recipe's `model.attention` values: no fused kernel (the original's ops, everywhere), or cuDNN's flash attention
# (`bert_tf.accelerators.cudnn_flash_attention`).
ATTENTION_KERNELS = ("einsum", "cudnn_flash")
_KERNEL = []  # the kernels of the `fused_attention_kernel` blocks entered, innermost last


@contextlib.contextmanager
def fused_attention_kernel(kernel):
    """Makes `BertSelfAttention` layers called inside (from any thread) use `kernel` where it applies; `None` keeps
    today's attention.

    Example:
    >>> with fused_attention_kernel(None):
    ...     active_attention_kernel() is None
    True
    """
    _KERNEL.append(kernel)
    try:
        yield kernel
    finally:
        _KERNEL.pop()


def active_attention_kernel():
    """The kernel of the innermost `fused_attention_kernel` block, or None."""
    return _KERNEL[-1] if _KERNEL else None

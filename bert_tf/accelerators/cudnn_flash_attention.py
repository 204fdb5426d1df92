"""cuDNN's flash attention in TensorFlow's XLA program: the forward and backward custom calls of XLA:GPU
(`cudnn_fmha_config`) joined by `tf.custom_gradient`, and the kernel `BertSelfAttention` takes inside
`modeling.attention_kernel.fused_attention_kernel` (see docs/gpu_attention.md).

The calls exist only in XLA:GPU (Ampere or later, 16-bit compute): XLA:CPU and XLA:TPU refuse them, and TensorFlow
cannot run them outside an XLA-compiled function. `CudnnFlashAttention` therefore applies only while XLA compiles
the function being traced, on static shapes (anything else, e.g. an export, keeps today's attention), and
`check_can_run` refuses a run that could not compile it before its first step.

What it does not do, and why:
- no dropout on the attention probabilities: cuDNN seeds its dropout with a compile-time constant advanced by a
  per-device counter that starts at 0, so every replica would draw the same masks and a resumed run would replay
  the masks of its start; the package's dropout promises neither (`modeling/dropout.py`);
- no packed rows: lengths describe one instance per row; a block-diagonal bias keeps today's attention.

Example (inside a function XLA compiles for a GPU):
>>> context = cudnn_flash_attention(q, k, v, lengths, scale=0.125)  # doctest: +SKIP
"""

import json

import tensorflow as tf

from bert_tf.accelerators import cudnn_fmha_config as fmha
from bert_tf.compat.tensorflow_internals import in_xla_compilation, xla_custom_call
from bert_tf.errors import InputError

MIN_COMPUTE_CAPABILITY = (8, 0)  # cuDNN's flash attention kernels start with Ampere
MAX_HEAD_SIZE = 128  # cuDNN's flash attention before Hopper (Hopper takes 256); BERT's heads are 64


def cudnn_flash_attention(q, k, v, lengths, scale, call=xla_custom_call):
    """softmax(q k^T * scale) v over the first `lengths[b]` keys of each row, for q, k, v [B, N, T, H] in bfloat16
    or float16 (static shapes) and `lengths` int32 [B]; the result is [B, N, T, H]. Queries beyond a row's length
    get zeros (cuDNN's padding mask), which nothing downstream reads: BERT pads at the end of each row and its
    losses read real tokens only.

    `call` emits one custom call (`xla_custom_call`'s signature); a test passes a reference implementation of the
    two targets to check the gradient's plumbing on a CPU.
    """
    batch, heads, seq, head_size = q.shape
    if None in (batch, heads, seq, head_size):
        raise ValueError(f"cuDNN flash attention needs static shapes, got q {q.shape}: compile the step with "
                         f"fixed batch and sequence sizes (drop_remainder batches).")
    if head_size > MAX_HEAD_SIZE or head_size % 8:
        raise ValueError(f"cuDNN flash attention takes head sizes up to {MAX_HEAD_SIZE} in multiples of 8, not "
                         f"{head_size}: use attention: einsum for this model.")
    dtype = q.dtype.name
    forward_config = json.dumps(fmha.backend_config(batch, heads, seq, dtype, scale, backward=False))
    backward_config = json.dumps(fmha.backend_config(batch, heads, seq, dtype, scale, backward=True))
    lengths = tf.cast(lengths, tf.int32)
    workspace = tf.TensorSpec([0], tf.uint8)

    @tf.custom_gradient
    def attention(q, k, v):
        out, statistics, _ = call(fmha.FORWARD_TARGET, [q, k, v, lengths, lengths],
                                  [tf.TensorSpec(q.shape, q.dtype), tf.TensorSpec([batch, heads, seq], tf.float32),
                                   workspace], forward_config)

        def grad(d_out):
            d_q, d_k, d_v, _ = call(fmha.BACKWARD_TARGET,
                                    [q, k, v, statistics, tf.cast(d_out, q.dtype), out, lengths, lengths],
                                    [tf.TensorSpec(t.shape, t.dtype) for t in (q, k, v)] + [workspace],
                                    backward_config)
            return d_q, d_k, d_v

        return out, grad

    return attention(q, k, v)


class CudnnFlashAttention:
    """The attention kernel `BertSelfAttention` takes inside `fused_attention_kernel(CudnnFlashAttention())`: q, k, v
    [B, T, A, d] and the rows' lengths in, the context [B, T, A, d] out, through `cudnn_flash_attention`. It applies
    only while XLA compiles the traced function, on static shapes.

    Example:
    >>> from bert_tf.modeling.attention_kernel import fused_attention_kernel
    >>> with fused_attention_kernel(CudnnFlashAttention()):  # doctest: +SKIP
    ...     trainer.train(...)
    """

    name = "cudnn_flash"

    def __init__(self, call=xla_custom_call):
        self.call = call

    def applies(self, q):
        """Inside a function XLA compiles, on static shapes (an evaluation's last, smaller batch keeps today's
        attention)."""
        return in_xla_compilation() and None not in q.shape

    def __call__(self, q, k, v, lengths, scale):
        q, k, v = (tf.transpose(t, (0, 2, 1, 3)) for t in (q, k, v))  # [B, A, T, d]: XLA's default layout
        return tf.transpose(cudnn_flash_attention(q, k, v, lengths, scale, self.call), (0, 2, 1, 3))


def check_can_run(jit_compile, mixed_precision, attention_dropout, compute_capabilities=None):
    """Raises `InputError` (one line: the cause and the fix) unless a run with these settings can compile cuDNN's
    flash attention: an XLA-compiled step, a 16-bit compute dtype, no attention-probability dropout, and GPUs of
    compute capability 8.0 or later (`compute_capabilities`: {GPU name: (major, minor)}, by default this
    machine's)."""
    fix = "or set model.attention: einsum"
    if not jit_compile:
        raise InputError(f"model.attention: cudnn_flash needs the step compiled by XLA: set jit_compile: true {fix}.")
    if mixed_precision not in ("mixed_bfloat16", "mixed_float16"):
        raise InputError(f"model.attention: cudnn_flash computes in 16 bits, not mixed_precision={mixed_precision}: "
                         f"set mixed_precision: mixed_bfloat16 {fix}.")
    if attention_dropout:
        raise InputError(f"model.attention: cudnn_flash has no attention-probability dropout, but "
                         f"attention_probs_dropout_prob={attention_dropout}: set model.attention_probs_dropout_prob: "
                         f"0.0 (a departure from the original BERT) {fix}.")
    if compute_capabilities is None:
        compute_capabilities = {gpu.name: tuple(tf.config.experimental.get_device_details(gpu).get(
            "compute_capability") or (0, 0)) for gpu in tf.config.list_physical_devices("GPU")}
    if not compute_capabilities:
        raise InputError(f"model.attention: cudnn_flash runs on NVIDIA GPUs only and this machine has none (CPU or "
                         f"TPU): {fix}.")
    for name, capability in compute_capabilities.items():
        if tuple(capability) < MIN_COMPUTE_CAPABILITY:
            raise InputError(f"model.attention: cudnn_flash needs a GPU of compute capability 8.0 or later (Ampere), "
                             f"{name} has {capability[0]}.{capability[1]}: {fix}.")


def run_attention_kernel(attention, jit_compile, mixed_precision, attention_dropout, compute_capabilities=None):
    """The kernel for a run's `model.attention` (None for "einsum", today's attention), after `check_can_run` for
    "cudnn_flash": a run enters `fused_attention_kernel(kernel)` around its steps.

    Example:
    >>> run_attention_kernel("einsum", jit_compile=False, mixed_precision="float32", attention_dropout=0.1) is None
    True
    """
    if attention != "einsum":
        check_can_run(jit_compile, mixed_precision, attention_dropout, compute_capabilities)
    return attention_kernel(attention)


def attention_kernel(attention):
    """The kernel of a `model.attention` value, unchecked (None for "einsum"): for tracing a program on a machine
    that will not run it (tools/xla/export_xla_step.py exports GPU steps on a CPU).

    Example:
    >>> attention_kernel("cudnn_flash").name
    'cudnn_flash'
    """
    return CudnnFlashAttention() if attention == "cudnn_flash" else None

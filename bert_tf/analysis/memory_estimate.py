"""How much accelerator memory a training step needs, from XLA's buffer assignment of the compiled step on the CPU,
and the largest micro-batch that fits a device.

The step (forward, backward, accumulation of two micro-batches, clipping, optimizer update) is compiled by XLA's
CPU compiler at two micro-batch sizes and two depths (1 and 2 Transformer blocks; compiling BERT-large whole takes
tens of minutes on two cores). Every block has the same shapes, so the buffers grow linearly in the depth and in
the micro-batch: the four compilations fix `fixed + per_sequence * micro_batch_size` at the model's real depth
(weights, optimizer slots, gradient accumulators and workspaces in `fixed`; activations and their gradients per
sequence). `tests/test_compiled_program.py` checks the extrapolation against a whole compiled model.

Caveats, written into the recipes that use these figures:
- The CPU compiler is not the TPU or GPU compiler: it fuses, lays out and schedules differently, and it may carry
  bfloat16 arithmetic in float32 temporaries. TPUs pad the two minor dimensions to tiles of 8 x 128 and
  rematerialise under memory pressure; GPUs add cuBLAS/cuDNN workspaces and the CUDA context (~0.5-1 GiB) and
  TensorFlow's allocator fragments. So the figure is an estimate of the program's own buffers, not a measurement.
- Only a run on the device confirms the fit: each recipe keeps a margin (`HEADROOM`) below the device memory.
"""

import dataclasses

from bert_tf.analysis.compiled_program import lower_training_loop, memory_report
from bert_tf.training.pretraining import resolve_bert_config

GIB = 1024 ** 3
# Fraction of a device's memory a recipe plans to use: the rest covers what the CPU estimate cannot see.
HEADROOM = 0.8


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """The memory of one replica's training step: `fixed_bytes + per_sequence_bytes * micro_batch_size`.

    Attributes:
        fixed_bytes: weights, optimizer slots, gradient accumulators and per-step workspaces.
        per_sequence_bytes: activations and their gradients for one sequence of the micro-batch.
        micro_batch_sizes: the two sizes compiled to measure it.
        depths: the two depths compiled (None: the model's own depth only).
    """

    fixed_bytes: float
    per_sequence_bytes: float
    micro_batch_sizes: tuple
    depths: tuple = None

    def bytes_for(self, micro_batch_size):
        """Estimated bytes of a step with micro-batches of `micro_batch_size` sequences.

        Example:
        >>> MemoryEstimate(2 * GIB, 0.5 * GIB, (1, 2)).bytes_for(4) / GIB
        4.0
        """
        return self.fixed_bytes + self.per_sequence_bytes * micro_batch_size

    def max_micro_batch_size(self, replica_batch_size, device_memory_bytes, headroom=HEADROOM):
        """The largest divisor of `replica_batch_size` whose step fits in `headroom` of the device's memory, or
        None when not even one sequence fits.

        Example:
        >>> MemoryEstimate(2 * GIB, 0.5 * GIB, (1, 2)).max_micro_batch_size(32, 8 * GIB)
        8
        """
        fitting = [m for m in range(1, replica_batch_size + 1)
                   if replica_batch_size % m == 0 and self.bytes_for(m) <= headroom * device_memory_bytes]
        return max(fitting) if fitting else None


def step_bytes(recipe, phase_index, micro_batch_size, num_hidden_layers=None):
    """Bytes XLA's CPU compiler assigns to one step of `recipe` (two accumulated micro-batches), optionally with the
    model cut to `num_hidden_layers` blocks."""
    if num_hidden_layers is not None:
        recipe = dataclasses.replace(recipe, model=dataclasses.replace(recipe.model,
                                                                      num_hidden_layers=num_hidden_layers))
    loop = lower_training_loop(recipe, phase_index, micro_batch_size, accumulation_steps=2, steps=1)
    return memory_report(loop.compiler_ir("optimized_hlo_proto_serialized")).total


def estimate_step_memory(recipe, phase_index=0, micro_batch_sizes=(4, 16), depths=(1, 2)):
    """The `MemoryEstimate` of `recipe`'s step at the shapes of one phase, from four XLA CPU compilations (two
    micro-batch sizes x two depths, extrapolated to the model's depth; `depths=None` compiles the whole model
    twice instead).

    Example:
    >>> estimate = estimate_step_memory(load_recipe("demo_cpu"))  # doctest: +SKIP
    >>> estimate.per_sequence_bytes > 0  # doctest: +SKIP
    True
    """
    small, large = micro_batch_sizes

    def fit(layers):
        totals = [step_bytes(recipe, phase_index, micro, layers) for micro in (small, large)]
        per_sequence = (totals[1] - totals[0]) / (large - small)
        return totals[0] - per_sequence * small, per_sequence

    if depths is None:
        return MemoryEstimate(*fit(None), (small, large))
    shallow, deep = depths
    (fixed_a, per_a), (fixed_b, per_b) = fit(shallow), fit(deep)
    blocks = (resolve_bert_config(recipe).num_hidden_layers - shallow) / (deep - shallow)
    return MemoryEstimate(fixed_a + (fixed_b - fixed_a) * blocks, per_a + (per_b - per_a) * blocks,
                          (small, large), (shallow, deep))

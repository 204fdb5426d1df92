"""How much accelerator memory a training step needs, from XLA's buffer assignment of the compiled step on the CPU
(the XLA:CPU estimate behind configs/platforms.yaml's `estimates`; `bert_tf.platforms` plans the micro-batches).

The step (forward, backward, accumulation of two micro-batches, clipping, optimizer update) is compiled by XLA's
CPU compiler at two micro-batch sizes and two depths (1 and 2 Transformer blocks; compiling BERT-large whole takes
tens of minutes on two cores). Every block has the same shapes, so the buffers grow linearly in the depth and in
the micro-batch: the four compilations fix `fixed + per_sequence * micro_batch_size` at the model's real depth
(`bert_tf.platforms.depth`; weights, optimizer slots, gradient accumulators and workspaces in `fixed`; activations
and their gradients per sequence). `tests/test_compiled_program.py` checks the extrapolation against a whole
compiled model.

Caveats, written into the recipes that use these figures:
- The CPU compiler is not the TPU or GPU compiler: it fuses, lays out and schedules differently, and it may carry
  bfloat16 arithmetic in float32 temporaries. TPUs pad the two minor dimensions to tiles of 8 x 128 and
  rematerialise under memory pressure; GPUs add cuBLAS/cuDNN workspaces and the CUDA context (~0.5-1 GiB) and
  TensorFlow's allocator fragments. So the figure is an estimate of the program's own buffers, not a measurement.
- Only a run on the device confirms the fit: each platform keeps a margin (`memory_margin`) below the device memory.
"""

import dataclasses

from bert_tf.analysis.compiled_program import lower_training_loop, memory_report
from bert_tf.platforms.depth import extrapolate_depth
from bert_tf.training.pretraining import resolve_bert_config


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
        >>> MemoryEstimate(2.0, 0.5, (1, 2)).bytes_for(4)
        4.0
        """
        return self.fixed_bytes + self.per_sequence_bytes * micro_batch_size


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
    by_depth = {depth: dict(zip(("fixed", "per_sequence"), fit(depth))) for depth in depths}
    whole = extrapolate_depth(by_depth, resolve_bert_config(recipe).num_hidden_layers)
    return MemoryEstimate(whole["fixed"], whole["per_sequence"], (small, large), tuple(depths))

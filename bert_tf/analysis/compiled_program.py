"""The multi-step training loop as the one XLA program an accelerator runs, lowered on the CPU without running it.

`lower_training_loop` builds a recipe's model, optimizer and `Trainer` on one replica and lowers `steps` steps of
the loop (forward, backward, micro-batch accumulation, clipping, optimizer update, metrics) with
`experimental_get_compiler_ir`, the batches given as one tensor as TPUStrategy's infeed gives them. Under
`OneDeviceStrategy` the update takes the branch TPUStrategy takes (`merge_call`, see `Trainer._apply_if`); under the
default strategy, the plain `tf.cond` of the GPU platforms' compiled step. From the
lowered program, `ProgramSummary` reads what matters on an accelerator: host transfers (each one a round trip
through the host per step), dynamic shapes (recompilation or padding), the dtypes of the matrix multiplications
(bfloat16 units are 2x-16x faster) and their FLOPs; `memory_report` reads XLA's buffer assignment after the CPU
compiler's optimisations (the input of the memory estimate in `memory_estimate`).
"""

import dataclasses
import math

import tensorflow as tf

from bert_tf.compat.tensorflow_internals import hlo_buffer_assignment, hlo_module, primitive_type_name
from bert_tf.instances.masking import MaskingRules
from bert_tf.optimizers.optimization import create_optimizer
from bert_tf.records.feature_spec import V1_TO_MODEL_NAMES
from bert_tf.records.packed_rows import FORMAT_FEATURE
from bert_tf.training.pretraining import create_pretrainer, resolve_bert_config
from bert_tf.training.strategy import worker_layout
from bert_tf.training.trainer import Trainer, update_branch

# Opcodes that move data between the device and the host inside a program.
HOST_TRANSFER_OPCODES = ("send", "send-done", "recv", "recv-done", "infeed", "outfeed")


@dataclasses.dataclass
class LoweredLoop:
    """A training loop function with the arguments it was lowered for.

    Attributes:
        function: the `tf.function(jit_compile=True)` of `steps` training steps.
        batches: the batches it reads, a dict of [steps, batch, ...] tensors.
        trainer: the `Trainer` whose loop it runs.
        update_branch: the branch its update took ("merge_call", as on TPUs, or "cond"; see `update_branch`).
    """

    function: object
    batches: dict
    trainer: object
    update_branch: str = "cond"

    def compiler_ir(self, stage):
        """The program at an `experimental_get_compiler_ir` stage ("hlo", "hlo_serialized", "optimized_hlo", ...)."""
        return self.function.experimental_get_compiler_ir(self.batches)(stage=stage)


def lower_training_loop(recipe, phase_index=0, micro_batch_size=None, accumulation_steps=1, steps=2,
                        strategy=None):
    """The training loop of `recipe` for one replica, at the shapes of one of its phases, ready to lower.

    Args:
        recipe: a `Recipe` (its model, optimizer, mixed precision, phases and row packing are used; no input files
            needed).
        phase_index: the phase whose sequence length and predictions give the shapes.
        micro_batch_size: sequences per micro-batch (default: the recipe's global batch, i.e. one replica).
        accumulation_steps: micro-batches per step on this replica.
        steps: steps in the loop.
        strategy: a one-replica strategy: `tf.distribute.OneDeviceStrategy("/cpu:0")` lowers the update's
            `merge_call` branch, TPUStrategy's; the default strategy (None) the plain `tf.cond`.

    Example:
    >>> recipe = load_recipe("demo_cpu")  # doctest: +SKIP
    >>> loop = lower_training_loop(recipe, micro_batch_size=4)  # doctest: +SKIP
    >>> ProgramSummary.from_hlo_module(loop.compiler_ir("hlo_serialized")).host_transfers  # doctest: +SKIP
    []
    """
    phase = recipe.phases[phase_index]
    micro = micro_batch_size or recipe.phase_batch_size(phase)
    batch = micro * accumulation_steps
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        model = create_pretrainer(resolve_bert_config(recipe), recipe.mixed_precision, recipe.use_next_sentence)
        optimizer = create_optimizer(recipe)
        branch = update_branch()
    trainer = Trainer(strategy, worker_layout(strategy), model, optimizer, max_micro_batch_size=micro)
    seq, pred = phase.max_seq_length, phase.max_predictions_per_seq
    layout = recipe.row_packing.row_layout(seq, pred, MaskingRules.masked_lm_prob)
    if layout is None:
        shapes = {"input_word_ids": [seq], "input_mask": [seq], "input_type_ids": [seq],
                  "masked_lm_positions": [pred], "masked_lm_ids": [pred], "masked_lm_weights": [pred],
                  "next_sentence_labels": [1]}
    else:  # packed rows, as the input pipeline gives them (a block-diagonal attention bias per row)
        shapes = {V1_TO_MODEL_NAMES.get(name, name): [length] for name, length in layout.lengths().items()
                  if name != FORMAT_FEATURE}
    batches = {name: tf.zeros([steps, batch] + shape, tf.float32 if name.endswith("_weights") else tf.int32)
               for name, shape in shapes.items()}
    function = tf.function(lambda data: trainer.run_steps(lambda i: ({k: v[i] for k, v in data.items()},), steps),
                           jit_compile=True, autograph=False)
    return LoweredLoop(function, batches, trainer, branch)


@dataclasses.dataclass
class DotOp:
    """One matrix multiplication of the program: its operand dtypes and FLOPs (2 x output size x contraction)."""

    name: str
    dtypes: tuple
    flops: float


@dataclasses.dataclass
class ProgramSummary:
    """What an HLO module holds, counted over its call graph (a computation called twice counts twice; a loop body
    once, i.e. per iteration).

    Attributes:
        dots: every dot op, as `DotOp`s.
        host_transfers: opcodes (or custom-call targets) that reach the host.
        dynamic_shapes: names of instructions with a dynamic dimension.
    """

    dots: list
    host_transfers: list
    dynamic_shapes: list

    @property
    def dot_flops(self):
        return sum(d.flops for d in self.dots)

    def dot_flops_by_dtype(self):
        """{operand dtypes: FLOPs}, e.g. {("bf16", "bf16"): 2.2e12}."""
        totals = {}
        for dot in self.dots:
            totals[dot.dtypes] = totals.get(dot.dtypes, 0.0) + dot.flops
        return totals

    @classmethod
    def from_hlo_module(cls, serialized):
        """Reads a serialized `HloModuleProto` (the "hlo_serialized" stage).

        Example:
        >>> f = tf.function(lambda a, b: tf.matmul(a, b), jit_compile=True)
        >>> x = tf.ones([4, 8])
        >>> ProgramSummary.from_hlo_module(f.experimental_get_compiler_ir(x, tf.ones([8, 2]))("hlo_serialized")
        ...                               ).dot_flops
        128.0
        """
        module = hlo_module(serialized)
        computations = {c.id: c for c in module.computations}
        summary = cls([], [], [])
        for computation_id, count in _call_counts(computations, module.entry_computation_id).items():
            instructions = {i.id: i for i in computations[computation_id].instructions}
            for instruction in instructions.values():
                summary._read(instruction, instructions, count)
        return summary

    def _read(self, instruction, instructions, count):
        opcode = instruction.opcode
        if opcode in HOST_TRANSFER_OPCODES or (
                opcode == "custom-call"
                and any(w in instruction.custom_call_target.lower() for w in ("host", "callback"))):
            self.host_transfers.append(opcode if opcode != "custom-call" else instruction.custom_call_target)
        if opcode in ("set-dimension-size", "get-dimension-size") or _is_dynamic(instruction.shape):
            self.dynamic_shapes.append(instruction.name)
        if opcode == "dot":
            lhs, rhs = (instructions[i] for i in instruction.operand_ids[:2])
            numbers = instruction.dot_dimension_numbers
            contraction = math.prod(lhs.shape.dimensions[d] for d in numbers.lhs_contracting_dimensions)
            flops = 2.0 * math.prod(instruction.shape.dimensions) * contraction
            dtypes = tuple(_dtype_name(op.shape.element_type) for op in (lhs, rhs))
            self.dots.extend([DotOp(instruction.name, dtypes, flops)] * count)


def _call_counts(computations, entry_id):
    """How many times each computation is entered per run of the entry (loop bodies: once per iteration)."""
    counts = {}

    def visit(computation_id, times):
        counts[computation_id] = counts.get(computation_id, 0) + times
        for instruction in computations[computation_id].instructions:
            for called in instruction.called_computation_ids:
                visit(called, times)

    visit(entry_id, 1)
    return counts


def _is_dynamic(shape):
    return any(shape.is_dynamic_dimension) or any(_is_dynamic(s) for s in shape.tuple_shapes)


def _dtype_name(element_type):
    return primitive_type_name(element_type)


@dataclasses.dataclass(frozen=True)
class MemoryReport:
    """XLA's buffer assignment of a compiled program, in bytes.

    Attributes:
        arguments: the entry parameters (variables, optimizer slots, the batches).
        outputs: buffers live out of the program that are not arguments (updated variables unless aliased).
        temporaries: everything else the program allocates (activations, gradients, workspaces).
    """

    arguments: int
    outputs: int
    temporaries: int

    @property
    def total(self):
        return self.arguments + self.outputs + self.temporaries


def memory_report(serialized_hlo_proto):
    """The `MemoryReport` of an "optimized_hlo_proto_serialized" program (an `HloProto` with its buffer
    assignment): allocation sizes by kind; thread-local and constant allocations are left out (small).

    Example:
    >>> f = tf.function(lambda a: tf.reduce_sum(tf.matmul(a, a)), jit_compile=True)
    >>> report = memory_report(f.experimental_get_compiler_ir(tf.ones([64, 64]))("optimized_hlo_proto_serialized"))
    >>> report.arguments, report.temporaries >= 64 * 64 * 4
    (16384, True)
    """
    assignment = hlo_buffer_assignment(serialized_hlo_proto)
    arguments = outputs = temporaries = 0
    for allocation in assignment.buffer_allocations:
        if allocation.is_thread_local or allocation.is_constant:
            continue
        if allocation.is_entry_computation_parameter:
            arguments += allocation.size
        elif allocation.maybe_live_out:
            outputs += allocation.size
        else:
            temporaries += allocation.size
    return MemoryReport(int(arguments), int(outputs), int(temporaries))


"""A pre-training recipe as data: the frozen dataclasses below are sections of the config schema
(`bert_tf.config_schema`), so every section checks its own fields when it is built (types from the annotations,
ranges in its `_rules`), errors name the field, the value and the fix, and `Section.override` (the schema's one
override) sets any field by path: `{"optimizer.beta_1": 0.95, "phases.input_file": [...],
"phases.0.mixed_inputs": "[{input_file: general-*.tfrecord, share: 0.05}]"}`. A field with a `help` is also a
`bert-pretrain` flag (`bert_tf.cli.config_flags`); `load_recipe` reads a file or a shipped recipe by name
(`bert_tf.config_loading`).

So adding a recipe field touches the dataclass it belongs to (with its rule, and its help if it is a flag) and the
YAML files that set it. The model's `BertConfig` is resolved where the run is assembled (`training/pretraining.py`).

One recipe is one run: one learning-rate schedule and one step counter over all its phases. Each phase has its
own input files and sequence lengths (the paper: 900,000 steps at 128 tokens, then 100,000 at 512).
"""

import dataclasses
import functools
import typing
from typing import Optional

from absl import logging

from bert_tf.config import BertConfig
from bert_tf.config_loading import load_config, shipped_names
from bert_tf.config_schema import ConfigError, Section, field_option
from bert_tf.inputs.input_spec import DEFAULT_PACKING_WINDOW, DEFAULT_SHUFFLE_BUFFER
from bert_tf.modeling.attention_kernel import ATTENTION_KERNELS
from bert_tf.optimizers.weight_decay_exclusions import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY
from bert_tf.platforms.compute_settings import JIT_COMPILE_SCOPES, MIXED_PRECISION
from bert_tf.platforms.platforms_file import platform_names
from bert_tf.records.packed_rows import DEFAULT_MAX_INSTANCES_PER_ROW

OPTIMIZERS = ("adamw", "lamb")
ALL_REDUCE_DTYPES = ("float32", "bfloat16")
# `bert-pretrain --help` lists the recipe's flags under this title, except the run's inputs and model, under
# `RUN_GROUP` beside the run options (`bert_tf.training.run_options`).
RECIPE_GROUP = "recipe overrides (unset: the recipe's value)"
RUN_GROUP = "the run"
# Where it runs: the run options' strategy and the recipe's platform.
WHERE_GROUP = "where it runs"


class RecipeError(ConfigError):
    """A recipe field has a wrong value; the message names the field, the value and the fix."""


class _Section(Section):
    """A recipe section: `Section`'s checks, raising `RecipeError`."""

    ERROR = RecipeError


@dataclasses.dataclass(frozen=True)
class OptimizerSpec(_Section):
    """The optimizer: "adamw" is the original AdamWeightDecay, "lamb" the large-batch option.

    `clip_norm` is the global gradient norm clip (1.0 in the original; null for none).
    """

    SECTION = "optimizer"
    name: str = field_option("adamw", "adamw (the original AdamWeightDecay) or lamb.", flag="optimizer",
                             choices=OPTIMIZERS)
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    weight_decay_rate: float = 0.01
    exclude_from_weight_decay: typing.Tuple[str, ...] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY
    clip_norm: Optional[float] = 1.0

    def _rules(self):
        return (("name", self.name in OPTIMIZERS, f"must be one of {', '.join(OPTIMIZERS)}"),
                ("beta_1", 0.0 <= self.beta_1 < 1.0, "must lie in [0, 1)"),
                ("beta_2", 0.0 <= self.beta_2 < 1.0, "must lie in [0, 1)"),
                ("epsilon", self.epsilon > 0, "must be positive (the original uses 1e-6)"),
                ("weight_decay_rate", self.weight_decay_rate >= 0, "must be >= 0"),
                ("clip_norm", self.clip_norm is None or self.clip_norm > 0,
                 "must be positive or null (no clipping)"))


@dataclasses.dataclass(frozen=True)
class InputSet(_Section):
    """Another input set a phase mixes into its own (`Phase.mixed_inputs`), e.g. a general corpus replayed beside
    the domain's: `input_file` (comma-separated globs, as the phase's) supplies a `share` of the phase's records."""

    input_file: str
    share: float

    def _rules(self):
        return (("share", 0.0 < self.share < 1.0, "must lie in (0, 1): the fraction of the phase's records read "
                                                  "from this input_file"),)


@dataclasses.dataclass(frozen=True)
class Phase(_Section):
    """A stretch of the run with its own input files and lengths. `num_steps` counts this phase's steps;
    `train_batch_size` (global) and `max_micro_batch_size` (sequences one replica computes at once: shorter
    sequences fit more) default to the recipe's. `mixed_inputs`: other input sets drawn from at their shares, the
    phase's own `input_file` supplying the rest (1 - their sum). In a recipe, errors name it `phases[N]`."""

    SECTION = "phases"
    name: str
    num_steps: int
    max_seq_length: int = field_option(help="Sequence length of a phase's records; once per phase.")
    max_predictions_per_seq: int = field_option(help="Masked positions per sequence of a phase's records; once per "
                                                     "phase.")
    input_file: Optional[str] = field_option(None, "TFRecords of a phase (comma-separated globs); once per phase.",
                                             group=RUN_GROUP)
    train_batch_size: Optional[int] = None
    max_micro_batch_size: Optional[int] = None
    mixed_inputs: typing.Tuple[InputSet, ...] = ()
    # Scaled to another num_train_steps, the phase keeps at least this many steps, or half the run if fewer
    # (`scaled_phase_steps`); null: in proportion, as the original's phases.
    min_num_steps: Optional[int] = None

    def _rules(self):
        positive, total = "must be a positive integer", sum(s.share for s in self.mixed_inputs)
        return (("num_steps", self.num_steps > 0, positive),
                ("max_seq_length", self.max_seq_length > 0, positive),
                ("max_predictions_per_seq", self.max_predictions_per_seq > 0, positive),
                ("max_predictions_per_seq", self.max_predictions_per_seq <= self.max_seq_length,
                 f"must not exceed max_seq_length={self.max_seq_length}"),
                ("train_batch_size", self.train_batch_size is None or self.train_batch_size > 0,
                 "must be a positive integer or null"),
                ("max_micro_batch_size", self.max_micro_batch_size is None or self.max_micro_batch_size > 0,
                 "must be a positive integer or null"),
                ("min_num_steps", self.min_num_steps is None or self.min_num_steps > 0,
                 "must be a positive integer or null"),
                ("mixed_inputs", total < 1.0,
                 f"must have shares that sum below 1 (they sum to {total:g}; the phase's own input_file reads the "
                 f"rest, 1 - sum): lower them"))

    @property
    def input_sets(self):
        """((input_file, share), ...) of the phase's own input and each of `mixed_inputs`, the shares summing to 1.

        >>> Phase("p", 1, 128, 20, "domain-*", mixed_inputs=(InputSet("general-*", 0.25),)).input_sets
        (('domain-*', 0.75), ('general-*', 0.25))
        """
        own = 1.0 - sum(s.share for s in self.mixed_inputs)
        return ((self.input_file, own), *((s.input_file, s.share) for s in self.mixed_inputs))

    @property
    def input_sets_text(self):
        """The input sets and their shares, as the run's log and summary write them.

        >>> Phase("p", 1, 128, 20, "domain-*", mixed_inputs=(InputSet("general-*", 0.25),)).input_sets_text
        'domain-* at 0.75, general-* at 0.25'
        """
        return ", ".join(f"{pattern} at {share:.4g}" for pattern, share in self.input_sets)


class _ModelChoice(_Section):
    """The model: a preset name or a `bert_config.json`, and any `BertConfig` field set beside them (e.g. dropout:
    `model: {preset: base, hidden_dropout_prob: 0.0}`, `--set=model.hidden_dropout_prob=0`); a field left null keeps
    the preset's or the file's value. Their types are checked here, their ranges when the run builds its
    `BertConfig` from the preset or file.

    Example:
    >>> ModelSpec.from_dict({"preset": "tiny", "hidden_dropout_prob": 0.0}, "recipe.yaml").overrides
    {'hidden_dropout_prob': 0.0}
    """

    SECTION = "model"

    def _rules(self):
        return (("preset", bool(self.preset) != bool(self.bert_config_file),
                 f"and bert_config_file={self.bert_config_file!r}: give exactly one of preset and "
                 f"bert_config_file"),
                ("attention", self.attention in ATTENTION_KERNELS, f"must be one of {', '.join(ATTENTION_KERNELS)}"),
                ("attention", self.attention != "cudnn_flash" or self.attention_probs_dropout_prob == 0.0,
                 "has no attention-probability dropout: set model.attention_probs_dropout_prob: 0.0 beside it (a "
                 "departure from the original BERT; docs/gpu_attention.md)"))

    @property
    def overrides(self):
        """{field: value} of the `BertConfig` fields this section sets (the others keep the preset's or file's)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(BertConfig)
                if getattr(self, f.name) is not None}

    def to_dict(self):
        """The preset or file and the fields set, as a recipe file writes them (no nulls for the others)."""
        return {"preset": self.preset, "bert_config_file": self.bert_config_file,
                **({"attention": self.attention} if self.attention != "einsum" else {}), **self.overrides}

    @classmethod
    def from_dict(cls, values, where=None):
        """`Section.from_dict`; a preset's name alone (`model: base`) is the mapping `{preset: base}`."""
        return super().from_dict({"preset": values} if isinstance(values, str) else values, where)


# The model section holds every `BertConfig` field (null: the preset's or file's value), so that one owner, BertConfig,
# lists them and the ordinary nested override sets them.
ModelSpec = dataclasses.make_dataclass(
    "ModelSpec",
    [("preset", Optional[str], dataclasses.field(default="base")),
     ("bert_config_file", Optional[str], field_option(None, "bert_config.json of the model (instead of the recipe's "
                                                            "preset).", group=RUN_GROUP)),
     # The attention's kernel (modeling/attention_kernel.py): einsum, the original's ops everywhere, or cudnn_flash.
     ("attention", str, dataclasses.field(default="einsum")),
     *((f.name, Optional[typing.get_type_hints(BertConfig)[f.name]], dataclasses.field(default=None))
       for f in dataclasses.fields(BertConfig))],
    bases=(_ModelChoice,), frozen=True)
ModelSpec.__module__, ModelSpec.__doc__ = __name__, _ModelChoice.__doc__


@dataclasses.dataclass(frozen=True)
class DynamicMaskingSpec(_Section):
    """RoBERTa's dynamic masking (an option): masks drawn again for every batch with the original rules."""

    SECTION = "dynamic_masking"
    enabled: bool = field_option(False, "Draw new masks for every batch (RoBERTa) instead of the records'.",
                                 flag="dynamic_masking")
    masked_lm_prob: float = 0.15
    do_whole_word_mask: bool = False

    def _rules(self):
        return (("masked_lm_prob", 0.0 < self.masked_lm_prob < 1.0, "must lie in (0, 1)"),)


@dataclasses.dataclass(frozen=True)
class RowPackingSpec(_Section):
    """Packed rows (an option, not in the original): unpacked records packed in the input pipeline, up to
    `max_instances_per_row` whole instances per row, attention kept within each (records written with
    `bert-create-pretraining-data --pack` are read as packed rows whatever this says). The batch counts rows.
    `max_predictions_per_row` null: enough slots for any row at the masking rate; `window`: records packed together.
    """

    SECTION = "row_packing"
    enabled: bool = field_option(False, "Pack unpacked records into rows of several instances in the input pipeline "
                                        "(the batch counts rows; records written with --pack are packed already).",
                                 flag="row_packing")
    max_instances_per_row: int = DEFAULT_MAX_INSTANCES_PER_ROW
    max_predictions_per_row: Optional[int] = None
    window: int = DEFAULT_PACKING_WINDOW

    def _rules(self):
        return (("max_instances_per_row", self.max_instances_per_row >= 2, "must be at least 2 (Krell et al. use 3)"),
                ("max_predictions_per_row", self.max_predictions_per_row is None or self.max_predictions_per_row > 0,
                 "must be a positive integer or null"),
                ("window", self.window > 0, "must be a positive integer"))

    def row_layout(self, max_seq_length, max_predictions_per_seq, masked_lm_prob):
        """The `RowLayout` of a phase's rows (None when disabled)."""
        if not self.enabled:
            return None
        from bert_tf.records.packed_rows import RowLayout
        return RowLayout.for_instances(max_seq_length, max_predictions_per_seq, masked_lm_prob,
                                       self.max_instances_per_row, self.max_predictions_per_row)


@dataclasses.dataclass(frozen=True)
class EvalSpec(_Section):
    """Evaluation on held-out records (the original `--do_eval`); lengths default to the last phase's."""

    SECTION = "eval"
    input_file: Optional[str] = field_option(None, "Held-out TFRecords evaluated at the end with the original "
                                                   "metrics.", flag="eval_input_file", group=RUN_GROUP)
    eval_batch_size: int = 8
    max_eval_steps: int = 100
    max_seq_length: Optional[int] = None
    max_predictions_per_seq: Optional[int] = None

    def _rules(self):
        return (("eval_batch_size", self.eval_batch_size > 0, "must be a positive integer"),
                ("max_eval_steps", self.max_eval_steps > 0, "must be a positive integer"),
                ("max_seq_length", self.max_seq_length is None or self.max_seq_length > 0,
                 "must be a positive integer or null"),
                ("max_predictions_per_seq", self.max_predictions_per_seq is None or self.max_predictions_per_seq > 0,
                 "must be a positive integer or null"))


@functools.lru_cache(maxsize=None)
def _platform_help():
    """`--platform`'s help, naming the platforms of configs/platforms.yaml."""
    return (f"Settings that fit an accelerator (configs/platforms.yaml: {', '.join(platform_names())}): mixed "
            f"precision, max_micro_batch_size, the eval batch and, on GPUs, whole-step XLA; explicit flags still "
            f"win. Global batch and schedule stay the recipe's. A machine without the platform's device exits 2.")


@dataclasses.dataclass(frozen=True)
class Recipe(_Section):
    """Everything a pre-training run needs except where it runs (`--strategy`, `--model_dir`:
    `bert_tf.training.run_options.RunOptions`).

    Example:
    >>> recipe = load_recipe("bert_base_paper")
    >>> recipe.train_batch_size, recipe.num_train_steps, [p.max_seq_length for p in recipe.phases]
    (256, 1000000, [128, 512])
    >>> recipe = recipe.override({"num_train_steps": 1000, "num_warmup_steps": 10,
    ...                           "phases.input_file": ["a/*.tfrecord", "b/*.tfrecord"]})
    >>> [p.num_steps for p in recipe.phases]
    [900, 100]
    >>> recipe.override({"optimizer.beta_1": 0.95}).optimizer.beta_1
    0.95
    """

    HELP_GROUP = RECIPE_GROUP
    name: str
    phases: typing.Tuple[Phase, ...]
    description: str = ""
    vocab_file: Optional[str] = field_option(None, "The vocab (copied into model_dir; needed by --dynamic_masking).",
                                             group=RUN_GROUP)
    init_checkpoint: Optional[str] = field_option(None, "A bert-convert / bert-pretrain directory to start the "
                                                        "weights from.", group=RUN_GROUP)
    train_batch_size: int = field_option(256, "Global batch size (sequences per step, all replicas).")
    num_train_steps: int = field_option(1_000_000, "Total steps of the run; the phases are rescaled in proportion.")
    num_warmup_steps: int = field_option(10_000, "Steps of linear learning-rate warmup from 0.")
    learning_rate: float = field_option(1e-4, "Peak learning rate.")
    optimizer: OptimizerSpec = OptimizerSpec()
    save_checkpoints_steps: int = field_option(1000, "Steps between checkpoints.")
    keep_checkpoint_max: int = 5
    iterations_per_loop: int = field_option(1000, "Steps per call of the compiled training loop.")
    max_seconds_per_loop: float = 5.0
    max_micro_batch_size: Optional[int] = field_option(None, "Most sequences one replica computes at once; larger "
                                                             "per-replica batches are accumulated over micro-batches.")
    mixed_precision: str = field_option("float32", "Compute dtype policy (float32 is the original).",
                                        choices=MIXED_PRECISION)
    jit_compile: bool = field_option(False, "Compile with XLA each replica's forward and backward pass, or its whole "
                                            "step with --set=jit_compile_scope=step (the GPU platforms' setting).")
    jit_compile_scope: str = "gradients"
    all_reduce_dtype: str = "float32"
    platform: Optional[str] = field_option(None, _platform_help, group=WHERE_GROUP)
    dynamic_masking: DynamicMaskingSpec = DynamicMaskingSpec()
    row_packing: RowPackingSpec = RowPackingSpec()
    use_next_sentence: bool = field_option(True, "Train the next-sentence loss (false: masked LM only).")
    eval: EvalSpec = EvalSpec()
    seed: int = field_option(12345, "Seed of the initialisation, the data order and dropout.")
    shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER
    # Resuming on another number of input hosts restarts the phase's input instead of stopping (checkpointing.py).
    restart_input_on_resize: bool = False
    # Checkpoints written in a background thread while training goes on.
    async_checkpoints: bool = False
    # Last: where the recipe.yaml of every run has written it.
    model: ModelSpec = ModelSpec()

    def _rules(self):
        positive = "must be a positive integer"
        names = [p.name for p in self.phases]
        twice = next((i for i, name in enumerate(names) if name in names[:i]), None)
        steps = sum(p.num_steps for p in self.phases)
        return (("train_batch_size", self.train_batch_size > 0, positive),
                ("num_train_steps", self.num_train_steps > 0, positive),
                ("save_checkpoints_steps", self.save_checkpoints_steps > 0, positive),
                ("keep_checkpoint_max", self.keep_checkpoint_max > 0, positive),
                ("iterations_per_loop", self.iterations_per_loop > 0, positive),
                ("max_seconds_per_loop", self.max_seconds_per_loop > 0,
                 "must be a positive number of seconds (a loop call's length with several workers)"),
                ("shuffle_buffer", self.shuffle_buffer > 0, positive),
                ("seed", self.seed >= 0, "must be a non-negative integer"),
                ("max_micro_batch_size", self.max_micro_batch_size is None or self.max_micro_batch_size > 0,
                 "must be a positive integer or null"),
                ("num_warmup_steps", 0 <= self.num_warmup_steps <= self.num_train_steps,
                 f"must be an integer in [0, num_train_steps={self.num_train_steps}]"),
                ("learning_rate", self.learning_rate > 0, "must be a positive number (the paper uses 1e-4)"),
                ("mixed_precision", self.mixed_precision in MIXED_PRECISION,
                 f"must be one of {', '.join(MIXED_PRECISION)}"),
                ("jit_compile_scope", self.jit_compile_scope in JIT_COMPILE_SCOPES,
                 f"must be one of {', '.join(JIT_COMPILE_SCOPES)}"),
                ("all_reduce_dtype", self.all_reduce_dtype in ALL_REDUCE_DTYPES,
                 f"must be one of {', '.join(ALL_REDUCE_DTYPES)} (the dtype gradients cross replicas in)"),
                ("phases", bool(self.phases), "must be a non-empty list of phases (name, num_steps, max_seq_length, "
                                              "max_predictions_per_seq, input_file)"),
                (f"phases[{twice}].name", twice is None, "is used twice: give each phase its own name"),
                ("num_train_steps", steps == self.num_train_steps,
                 f"must equal the sum of the phases' num_steps ({steps}); fix one of them"),
                self._row_slots_rule())

    def _row_slots_rule(self):
        """Rows packed in the pipeline hold each instance's predictions in one row: fewer slots than an instance
        may predict would fail inside tf.data, steps into the run."""
        slots = self.row_packing.max_predictions_per_row
        most = max([p.max_predictions_per_seq for p in self.phases] + [self.eval.max_predictions_per_seq or 0])
        return ("row_packing.max_predictions_per_row", not self.row_packing.enabled or slots is None or slots >= most,
                f"must be at least the most predictions of one instance, max_predictions_per_seq={most}, or null "
                f"(enough slots for any row)")

    def _override_where(self):
        return f"recipe {self.name!r}"

    def _overridden(self, values, paths):
        """What setting a field implies: a new num_train_steps rescales the phases in proportion (900k/100k ->
        90%/10%), a new train_batch_size or max_micro_batch_size replaces the phases' own (unless a phase's is set
        too), a bert_config_file replaces the preset."""
        phases = values["phases"]
        for name in ("train_batch_size", "max_micro_batch_size"):
            if name in paths:
                for i, phase in enumerate(phases):
                    if not {f"phases.{name}", f"phases.{i}.{name}"} & paths:
                        phase[name] = None
        if "model.bert_config_file" in paths and "model.preset" not in paths:
            values["model"]["preset"] = None
        if "num_train_steps" in paths:
            total = values["num_train_steps"]
            if "num_warmup_steps" not in paths and isinstance(total, int) and self.num_warmup_steps > total:
                raise RecipeError(f"num_train_steps={total} is below the recipe's num_warmup_steps="
                                  f"{self.num_warmup_steps}: also pass --num_warmup_steps.")
            values["phases"] = _rescale_phases(phases, total)
        return values

    @property
    def phase_ends(self):
        """The global step at which each phase ends."""
        ends, total = [], 0
        for phase in self.phases:
            total += phase.num_steps
            ends.append(total)
        return ends

    def phase_batch_size(self, phase):
        return phase.train_batch_size or self.train_batch_size

    def phase_micro_batch_size(self, phase):
        """The phase's `max_micro_batch_size`, else the recipe's (None: the whole replica batch at once)."""
        return phase.max_micro_batch_size or self.max_micro_batch_size


def recipe_names():
    """The names of the recipes that ship in configs/pretrain/.

    >>> "bert_base_paper" in recipe_names()
    True
    """
    return shipped_names("pretrain")


def load_recipe(name_or_path):
    """A recipe from a YAML or JSON file, or by name from configs/pretrain/ ("bert_base_paper", "demo_cpu", ...)."""
    return load_config(Recipe, name_or_path, shipped="pretrain", kind="recipe")


def _rescale_phases(phases, total):
    """The phases' mappings with their num_steps rescaled to sum to `total` (`scaled_phase_steps`)."""
    if not isinstance(total, int) or isinstance(total, bool) or total < len(phases):
        raise RecipeError(f"num_train_steps={total!r} must be an integer of at least {len(phases)} (one step per "
                          f"phase).")
    counts = scaled_phase_steps([p["num_steps"] for p in phases], total, [p.get("min_num_steps") for p in phases])
    scaled = [dict(p, num_steps=steps) for p, steps in zip(phases, counts)]
    if len(phases) > 1:
        logging.info("num_train_steps=%d: phases rescaled to %s.", total,
                     ", ".join(f"{p['name']} {p['num_steps']}" for p in scaled))
    return scaled


def scaled_phase_steps(steps, total, min_steps=None):
    """The phases' steps in a run of `total` steps: in proportion to the recipe's `steps`, except that a phase with
    a `min_steps` (its `min_num_steps`) keeps at least that many, or half the run if that is fewer, the other phases
    sharing the rest in proportion. The paper's recipes set none (1M steps as 900k/100k scale to 900/100 of 1,000);
    `small_fast` sets one for its 128-token phase, which scaled to a small budget in proportion kept too few steps to
    learn the positions past 32 (docs/convergence.md, "A budget that ends strong").

    >>> scaled_phase_steps([900_000, 100_000], 1000)
    [900, 100]
    >>> [scaled_phase_steps([18_000, 2_000], total, [None, 2000]) for total in (1500, 3000, 5000, 20_000)]
    [[750, 750], [1500, 1500], [3000, 2000], [18000, 2000]]
    """
    floors = {i: min(m, total // 2) for i, m in enumerate(min_steps or ()) if m}
    counts, kept = _in_proportion(steps, total), {}
    while short := {i: floor for i, floor in floors.items() if i not in kept and counts[i] < floor}:
        kept.update(short)
        rest = [i for i in range(len(steps)) if i not in kept]
        left = total - sum(kept.values())
        if len(rest) > left or (not rest and left):
            raise RecipeError(f"num_train_steps={total} cannot give the phases' min_num_steps "
                              f"({list(min_steps)}) and one step to every other phase: raise num_train_steps "
                              f"or lower a min_num_steps.")
        counts = [kept.get(i) for i in range(len(steps))]
        for i, count in zip(rest, _in_proportion([steps[i] for i in rest], left) if rest else ()):
            counts[i] = count
    return counts


def _in_proportion(steps, total):
    """`steps` rescaled in proportion to sum to `total`, each at least 1, the last taking what rounding leaves."""
    scaled, used = [], 0
    for i, count in enumerate(steps):
        if i == len(steps) - 1:
            count = total - used
        else:
            count = max(1, round(total * count / sum(steps)))
            count = min(count, total - used - (len(steps) - 1 - i))
        used += count
        scaled.append(count)
    return scaled


def check_ready(recipe):
    """Checks what a run needs beyond a valid recipe: every phase has input files, dynamic masking has a vocab."""
    for phase in recipe.phases:
        if not phase.input_file:
            raise RecipeError(f"Phase {phase.name!r} of recipe {recipe.name!r} has no input_file: set it in the "
                              f"recipe or pass --input_file once per phase (in order).")
    if recipe.dynamic_masking.enabled and not recipe.vocab_file:
        raise RecipeError("dynamic_masking needs the vocab (to find [MASK], [CLS], [SEP] and word pieces): pass "
                          "--vocab_file or set vocab_file in the recipe.")

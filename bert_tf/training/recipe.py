"""A pre-training recipe as data, one job per part:

- the schema: the frozen dataclasses below, built on `bert_tf.config_schema` (the machinery every configuration
  shares): every section checks its own fields when it is built (types from the annotations, ranges in its
  `_rules`), and errors name the field, the value and the fix;
- YAML loading: `load_recipe` (numbers in YAML 1.2's syntax, so `1e-4` is a number, not a string);
- overrides: `Recipe.override({"optimizer.beta_1": 0.95, "phases.input_file": [...],
  "phases.0.mixed_inputs": "[{input_file: general-*.tfrecord, share: 0.05}]"})`, one mechanism for every field,
  which `with_overrides(**flags)` and `bert-pretrain`'s flags go through.

So adding a recipe field touches the dataclass it belongs to (with its rule) and the YAML files that set it.
The model's `BertConfig` is resolved where the run is assembled (`training/pretraining.py`).

One recipe is one run: one learning-rate schedule and one step counter over all its phases. Each phase has its
own input files and sequence lengths (the paper: 900,000 steps at 128 tokens, then 100,000 at 512).
"""

import dataclasses
import os
import typing
from typing import Optional

from absl import logging

from bert_tf.config import BertConfig, configs_dir
from bert_tf.config_schema import (
    TYPE_CHECKS,
    ConfigError,
    Section,
    check_field_types,
    check_keys,
    check_value_type,
    parse_value,
    read_yaml,
    section_items,
)
from bert_tf.file_io import file_exists, read_text
from bert_tf.optimizers.weight_decay_exclusions import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY

OPTIMIZERS = ("adamw", "lamb")
MIXED_PRECISION = ("float32", "mixed_bfloat16", "mixed_float16")
# What `jit_compile: true` compiles: each replica's forward and backward pass, or its whole step (the all-reduce and
# the optimizer's update too, as Model Garden compiles the step on GPUs); see `Trainer`.
JIT_COMPILE_SCOPES = ("gradients", "step")
ALL_REDUCE_DTYPES = ("float32", "bfloat16")
# The original scripts' flag names for fields that live in a section.
ALIASES = {"optimizer": "optimizer.name", "dynamic_masking": "dynamic_masking.enabled",
           "row_packing": "row_packing.enabled",
           "eval_input_file": "eval.input_file", "bert_config_file": "model.bert_config_file"}


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
    name: str = "adamw"
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
    phase's own `input_file` supplying the rest (1 - their sum). (Checked by the recipe, which knows its index.)"""

    name: str
    num_steps: int
    max_seq_length: int
    max_predictions_per_seq: int
    input_file: Optional[str] = None
    train_batch_size: Optional[int] = None
    max_micro_batch_size: Optional[int] = None
    mixed_inputs: typing.Tuple[InputSet, ...] = ()

    def __post_init__(self):
        pass

    def _rules(self):
        total = sum(s.share for s in self.mixed_inputs)
        return (("mixed_inputs", total < 1.0,
                 f"must have shares that sum below 1 (they sum to {total:g}; the phase's own input_file reads the "
                 f"rest, 1 - sum): lower them"),)

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


@dataclasses.dataclass(frozen=True)
class ModelSpec(_Section):
    """The model: a preset name or a `bert_config.json`, plus `BertConfig` field overrides (e.g. dropout)."""

    SECTION = "model"
    preset: Optional[str] = "base"
    bert_config_file: Optional[str] = None
    overrides: dict = dataclasses.field(default_factory=dict)

    def _rules(self):
        return (("preset", bool(self.preset) != bool(self.bert_config_file),
                 f"and bert_config_file={self.bert_config_file!r}: give exactly one of preset and "
                 f"bert_config_file"),)


@dataclasses.dataclass(frozen=True)
class DynamicMaskingSpec(_Section):
    """RoBERTa's dynamic masking (an option): masks drawn again for every batch with the original rules."""

    SECTION = "dynamic_masking"
    enabled: bool = False
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
    enabled: bool = False
    max_instances_per_row: int = 3
    max_predictions_per_row: Optional[int] = None
    window: int = 256

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
    input_file: Optional[str] = None
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


SECTIONS = {"model": ModelSpec, "optimizer": OptimizerSpec, "dynamic_masking": DynamicMaskingSpec,
            "row_packing": RowPackingSpec, "eval": EvalSpec}


@dataclasses.dataclass(frozen=True)
class Recipe(_Section):
    """Everything a pre-training run needs except where it runs (`--strategy`, `--model_dir`).

    Example:
    >>> recipe = load_recipe("bert_base_paper")
    >>> recipe.train_batch_size, recipe.num_train_steps, [p.max_seq_length for p in recipe.phases]
    (256, 1000000, [128, 512])
    >>> recipe = recipe.with_overrides(num_train_steps=1000, num_warmup_steps=10,
    ...                             input_file=["a/*.tfrecord", "b/*.tfrecord"])
    >>> [p.num_steps for p in recipe.phases]
    [900, 100]
    >>> recipe.override({"optimizer.beta_1": 0.95}).optimizer.beta_1
    0.95
    """

    name: str
    phases: tuple
    description: str = ""
    model: ModelSpec = ModelSpec()
    vocab_file: Optional[str] = None
    init_checkpoint: Optional[str] = None
    train_batch_size: int = 256
    num_train_steps: int = 1_000_000
    num_warmup_steps: int = 10_000
    learning_rate: float = 1e-4
    optimizer: OptimizerSpec = OptimizerSpec()
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    iterations_per_loop: int = 1000
    max_seconds_per_loop: float = 5.0
    max_micro_batch_size: Optional[int] = None
    mixed_precision: str = "float32"
    jit_compile: bool = False
    jit_compile_scope: str = "gradients"
    all_reduce_dtype: str = "float32"
    platform: Optional[str] = None
    dynamic_masking: DynamicMaskingSpec = DynamicMaskingSpec()
    row_packing: RowPackingSpec = RowPackingSpec()
    use_next_sentence: bool = True
    eval: EvalSpec = EvalSpec()
    seed: int = 12345
    shuffle_buffer: int = 100
    # Resuming on another number of input hosts restarts the phase's input instead of stopping (checkpointing.py).
    restart_input_on_resize: bool = False
    # Checkpoints written in a background thread while training goes on.
    async_checkpoints: bool = False

    def __post_init__(self):
        super().__post_init__()
        _check_phases(self)

    def _rules(self):
        positive = "must be a positive integer"
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
                 f"must be one of {', '.join(ALL_REDUCE_DTYPES)} (the dtype gradients cross replicas in)"))

    @classmethod
    def from_dict(cls, values, where="recipe"):
        """Builds a recipe from the YAML's dict; unknown keys and wrong values are errors naming the field."""
        values = dict(values)
        check_keys(values, cls, where, ("name", "phases"), RecipeError)
        if not isinstance(values["phases"], (list, tuple)) or not values["phases"]:
            raise RecipeError(f"{where}: phases must be a non-empty list of phases (name, num_steps, "
                              f"max_seq_length, max_predictions_per_seq, input_file).")
        values["phases"] = tuple(phase if isinstance(phase, Phase) else Phase.from_dict(phase, f"{where}: phases[{i}]")
                                 for i, phase in enumerate(values["phases"]))
        try:
            for key, spec_cls in SECTIONS.items():
                if key in values:
                    values[key] = _section(spec_cls, values[key], where)
            return cls(**values)
        except RecipeError as e:
            raise RecipeError(str(e) if str(e).startswith(f"{where}:") else f"{where}: {e}") from None

    def to_dict(self):
        values = dataclasses.asdict(self)
        model = values.pop("model")
        values["model"] = {"preset": model["preset"], "bert_config_file": model["bert_config_file"],
                           **model["overrides"]}
        values["phases"] = [dict(p, mixed_inputs=[dict(s) for s in p["mixed_inputs"]]) for p in values["phases"]]
        values["optimizer"]["exclude_from_weight_decay"] = list(values["optimizer"]["exclude_from_weight_decay"])
        return values

    def override(self, overrides, flags=None):
        """A copy with fields replaced by dotted path: "learning_rate", "optimizer.beta_1", "model.hidden_size"
        (a `BertConfig` field), "phases.input_file" (a list with one value per phase, or one value for a
        one-phase recipe), "phases.1.max_seq_length". String values (from `--set field=value`) are read as YAML.

        `flags` maps a path to the flag that gave it (`with_overrides`), for the errors to name; other paths
        came from `--set`.

        Four fields carry a rule: a new num_train_steps rescales the phases in proportion (900k/100k ->
        90%/10%), a new train_batch_size or max_micro_batch_size replaces the phases' own, a bert_config_file
        replaces the preset.
        """
        values = self.to_dict()
        flags = flags or {}
        total = None
        for path, value in overrides.items():
            if isinstance(value, str) and path.split(".")[-1] not in _STRING_FIELDS:
                value = parse_value(value, path, RecipeError)
            if path == "num_train_steps":
                total = value
                continue
            _set_path(self, values, path, value, flags.get(path))
            if path in ("train_batch_size", "max_micro_batch_size"):
                for phase in values["phases"]:
                    phase[path] = None
            if path == "model.bert_config_file":
                values["model"]["preset"] = None
        if total is not None:
            if "num_warmup_steps" not in overrides and isinstance(total, int) and self.num_warmup_steps > total:
                raise RecipeError(f"num_train_steps={total} is below the recipe's num_warmup_steps="
                                  f"{self.num_warmup_steps}: also pass --num_warmup_steps.")
            values["phases"] = [dataclasses.asdict(p) for p in _rescale_phases(
                [Phase(**p) for p in values["phases"]], total)]
            values["num_train_steps"] = total
        return Recipe.from_dict(values, f"recipe {self.name!r}")

    def with_overrides(self, **flags):
        """`override` with the original flag names (None means "not given"): the recipe-wide fields by name,
        `optimizer` (a name), `dynamic_masking` (a bool), `eval_input_file`, `bert_config_file`, and per phase
        `input_file`, `max_seq_length`, `max_predictions_per_seq` (one value per phase, in order)."""
        recipe_fields = {f.name for f in dataclasses.fields(Recipe)}
        paths, given_by = {}, {}
        for key, value in flags.items():
            if value is None:
                continue
            path = ALIASES.get(key, key)
            if path not in recipe_fields and "." not in path and path in _PHASE_FIELDS:
                path = f"phases.{path}"
            paths[path], given_by[path] = value, f"--{key}"
        return self.override(paths, given_by)

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


_PHASE_FIELDS = {f.name for f in dataclasses.fields(Phase)}
_LIST_PHASE_FIELDS = {f.name for f in dataclasses.fields(Phase) if section_items(typing.get_type_hints(Phase)[f.name])}
# Fields whose values stay strings in `override` even when they read as something else in YAML (a file "1e-4").
_STRING_FIELDS = {f.name for cls in (Recipe, Phase, BertConfig, *SECTIONS.values()) for f in dataclasses.fields(cls)
                  if typing.get_type_hints(cls)[f.name] in (str, Optional[str])}


def recipe_names():
    """The names of the recipes that ship in configs/pretrain/.

    >>> "bert_base_paper" in recipe_names()
    True
    """
    return sorted(f[:-len(".yaml")] for f in os.listdir(os.path.join(configs_dir(), "pretrain")) if f.endswith(".yaml"))


def load_recipe(name_or_path):
    """A recipe from a YAML file, or by name from configs/pretrain/ ("bert_base_paper", "demo_cpu", ...)."""
    path = name_or_path
    if not file_exists(path):
        named = os.path.join(configs_dir(), "pretrain", f"{name_or_path}.yaml")
        if not os.path.exists(named):
            raise RecipeError(f"No recipe file {name_or_path!r}: pass a YAML path or one of {recipe_names()}.")
        path = named
    values = read_yaml(read_text(path), path, RecipeError)
    return Recipe.from_dict(values, os.path.basename(path))


def _set_path(recipe, values, path, value, flag=None):
    """Sets `path` (dotted) in the recipe's dict `values`; unknown paths are an error naming the known ones. `flag`
    is the command-line flag that gave the value (errors name it), else the value came from `--set`."""
    parts = path.split(".")
    if parts[0] == "phases" and len(parts) == 2 and parts[1] in _PHASE_FIELDS:
        # A list field (mixed_inputs) takes a list per phase; one list of its items is a one-phase recipe's value.
        one_value = not isinstance(value, (list, tuple)) or (
            parts[1] in _LIST_PHASE_FIELDS and not (value and all(isinstance(v, (list, tuple)) for v in value)))
        per_phase = [value] if one_value else list(value)
        if len(per_phase) != len(values["phases"]):
            phases = f"{len(values['phases'])} phases ({', '.join(p['name'] for p in values['phases'])})"
            if flag:
                raise RecipeError(f"{flag} was given {len(per_phase)} time(s) but recipe {recipe.name!r} has "
                                  f"{phases}: give it once per phase, in order.")
            lists = parts[1] in _LIST_PHASE_FIELDS
            raise RecipeError(f"--set {path}= gave {len(per_phase)} {'list(s)' if lists else 'value(s)'} but recipe "
                              f"{recipe.name!r} has {phases}: give a list of "
                              f"{'lists' if lists else 'values'}, one per phase, in order, or set one phase's with "
                              f"--set phases.N.{parts[1]}=.")
        for phase, v in zip(values["phases"], per_phase):
            phase[parts[1]] = v
        return
    if parts[0] == "phases" and len(parts) == 3 and parts[1].isdigit() and parts[2] in _PHASE_FIELDS:
        if int(parts[1]) >= len(values["phases"]):
            raise RecipeError(f"{path}: recipe {recipe.name!r} has {len(values['phases'])} phases.")
        values["phases"][int(parts[1])][parts[2]] = value
        return
    if len(parts) == 1 and parts[0] in values and parts[0] not in SECTIONS and parts[0] != "phases":
        values[parts[0]] = value
        return
    if len(parts) == 2 and parts[0] in SECTIONS:
        known = ({f.name for f in dataclasses.fields(BertConfig)} | {"preset", "bert_config_file"}
                 if parts[0] == "model" else {f.name for f in dataclasses.fields(SECTIONS[parts[0]])})
        if parts[1] in known:
            values[parts[0]][parts[1]] = value
            return
    raise RecipeError(f"Unknown override {path!r}: use a recipe field ({', '.join(sorted(values))}), a section's "
                      f"field as section.field, or phases.FIELD / phases.N.FIELD.")


def _section(spec_cls, values, source):
    if spec_cls is ModelSpec:
        return _model_spec(values, f"{source}: model")
    if isinstance(values, spec_cls):
        return values
    return spec_cls.from_dict(values, source)


def _model_spec(values, where):
    if isinstance(values, ModelSpec):
        return values
    if isinstance(values, str):
        values = {"preset": values}
    if not isinstance(values, dict):
        raise RecipeError(f"{where} must be a preset name or a mapping, got {values!r}.")
    values = dict(values)
    preset, config_file = values.pop("preset", None), values.pop("bert_config_file", None)
    known = {f.name for f in dataclasses.fields(BertConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise RecipeError(f"{where}: unknown BertConfig field(s) {unknown}; known: preset, bert_config_file, "
                          f"{', '.join(sorted(known))}.")
    defaults = BertConfig()
    for name, value in values.items():  # types here; ranges when the run builds its BertConfig
        kind = float if isinstance(getattr(defaults, name), float) else type(getattr(defaults, name))
        check_value_type(f"model.{name}", value, kind if kind in TYPE_CHECKS else None, RecipeError)
    return ModelSpec(preset=preset, bert_config_file=config_file, overrides=values)


def _rescale_phases(phases, total):
    if not isinstance(total, int) or isinstance(total, bool) or total < len(phases):
        raise RecipeError(f"num_train_steps={total!r} must be an integer of at least {len(phases)} (one step per "
                          f"phase).")
    old_total = sum(p.num_steps for p in phases)
    scaled, used = [], 0
    for i, phase in enumerate(phases):
        if i == len(phases) - 1:
            steps = total - used
        else:
            steps = max(1, round(total * phase.num_steps / old_total))
            steps = min(steps, total - used - (len(phases) - 1 - i))
        used += steps
        scaled.append(dataclasses.replace(phase, num_steps=steps))
    if len(phases) > 1:
        logging.info("num_train_steps=%d: phases rescaled to %s.", total,
                     ", ".join(f"{p.name} {p.num_steps}" for p in scaled))
    return scaled


def _check_phases(recipe):
    names = set()
    for i, phase in enumerate(recipe.phases):
        where = f"phases[{i}]"
        if not isinstance(phase, Phase):
            raise RecipeError(f"{where}={phase!r} must be a Phase.")
        check_field_types(phase, f"{where}.", RecipeError)
        for field, ok, rule in phase._rules():
            if not ok:
                raise RecipeError(f"{where}.{field}={getattr(phase, field)!r} {rule}.")
        if phase.name in names:
            raise RecipeError(f"{where}.name={phase.name!r} is used twice: give each phase its own name.")
        names.add(phase.name)
        for field in ("num_steps", "max_seq_length", "max_predictions_per_seq"):
            if getattr(phase, field) <= 0:
                raise RecipeError(f"{where}.{field}={getattr(phase, field)!r} must be a positive integer.")
        if phase.max_predictions_per_seq > phase.max_seq_length:
            raise RecipeError(f"{where}.max_predictions_per_seq={phase.max_predictions_per_seq} must not exceed "
                              f"max_seq_length={phase.max_seq_length}.")
        for field in ("train_batch_size", "max_micro_batch_size"):
            if getattr(phase, field) is not None and getattr(phase, field) <= 0:
                raise RecipeError(f"{where}.{field}={getattr(phase, field)!r} must be a positive integer or null.")
    total = sum(p.num_steps for p in recipe.phases)
    if total != recipe.num_train_steps:
        raise RecipeError(f"num_train_steps={recipe.num_train_steps!r} must equal the sum of the phases' num_steps "
                          f"({total}); fix one of them.")


def check_ready(recipe):
    """Checks what a run needs beyond a valid recipe: every phase has input files, dynamic masking has a vocab."""
    for phase in recipe.phases:
        if not phase.input_file:
            raise RecipeError(f"Phase {phase.name!r} of recipe {recipe.name!r} has no input_file: set it in the "
                              f"recipe or pass --input_file once per phase (in order).")
    if recipe.dynamic_masking.enabled and not recipe.vocab_file:
        raise RecipeError("dynamic_masking needs the vocab (to find [MASK], [CLS], [SEP] and word pieces): pass "
                          "--vocab_file or set vocab_file in the recipe.")

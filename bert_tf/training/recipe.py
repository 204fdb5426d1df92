"""A pre-training recipe as data: a YAML file under configs/pretrain/ loaded into frozen dataclasses, validated
with errors that name the field, and overridden by the `bert-pretrain` flags.

One recipe is one run: one learning-rate schedule and one step counter over all its phases. Each phase has its
own input files and sequence lengths (the paper: 900,000 steps at 128 tokens, then 100,000 at 512).
"""

import dataclasses
import os
from typing import Optional

import tensorflow as tf
import yaml
from absl import logging

from bert_tf.config import BertConfig, configs_dir
from bert_tf.training.weight_decay_optimizer import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY

OPTIMIZERS = ("adamw", "lamb")
MIXED_PRECISION = ("float32", "mixed_bfloat16", "mixed_float16")


class RecipeError(ValueError):
    """A recipe field has a wrong value; the message names the field, the value and the fix."""


@dataclasses.dataclass(frozen=True)
class OptimizerSpec:
    """The optimizer: "adamw" is the original AdamWeightDecay, "lamb" the large-batch option.

    `clip_norm` is the global gradient norm clip (1.0 in the original; null for none).
    """

    name: str = "adamw"
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    weight_decay_rate: float = 0.01
    exclude_from_weight_decay: tuple = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY
    clip_norm: Optional[float] = 1.0


@dataclasses.dataclass(frozen=True)
class Phase:
    """A stretch of the run with its own input files and lengths. `num_steps` counts this phase's steps;
    `train_batch_size` (global) defaults to the recipe's."""

    name: str
    num_steps: int
    max_seq_length: int
    max_predictions_per_seq: int
    input_file: Optional[str] = None
    train_batch_size: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """The model: a preset name or a `bert_config.json`, plus `BertConfig` field overrides (e.g. dropout)."""

    preset: Optional[str] = "base"
    bert_config_file: Optional[str] = None
    overrides: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class DynamicMaskingSpec:
    """RoBERTa's dynamic masking (an option): masks drawn again for every batch with the original rules."""

    enabled: bool = False
    masked_lm_prob: float = 0.15
    do_whole_word_mask: bool = False


@dataclasses.dataclass(frozen=True)
class EvalSpec:
    """Evaluation on held-out records (the original `--do_eval`); lengths default to the last phase's."""

    input_file: Optional[str] = None
    eval_batch_size: int = 8
    max_eval_steps: int = 100
    max_seq_length: Optional[int] = None
    max_predictions_per_seq: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Everything a pre-training run needs except where it runs (`--strategy`, `--model_dir`).

    Example:
    >>> recipe = load_recipe("bert_base_paper")
    >>> recipe.train_batch_size, recipe.num_train_steps, [p.max_seq_length for p in recipe.phases]
    (256, 1000000, [128, 512])
    >>> recipe = recipe.with_overrides(num_train_steps=1000, num_warmup_steps=10,
    ...                             input_file=["a/*.tfrecord", "b/*.tfrecord"])
    >>> [p.num_steps for p in recipe.phases]
    [900, 100]
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
    max_micro_batch_size: Optional[int] = None
    mixed_precision: str = "float32"
    jit_compile: bool = False
    dynamic_masking: DynamicMaskingSpec = DynamicMaskingSpec()
    use_next_sentence: bool = True
    eval: EvalSpec = EvalSpec()
    seed: int = 12345
    shuffle_buffer: int = 100

    def __post_init__(self):
        _validate(self)

    @classmethod
    def from_dict(cls, values, source="recipe"):
        """Builds a recipe from the YAML's dict; unknown keys and wrong types are errors naming the field."""
        values = dict(values)
        _check_keys(values, cls, source, required=("name", "phases"))
        if not isinstance(values["phases"], list) or not values["phases"]:
            raise RecipeError(f"{source}: phases must be a non-empty list of phases (name, num_steps, "
                              f"max_seq_length, max_predictions_per_seq, input_file).")
        phases = []
        for i, phase in enumerate(values["phases"]):
            where = f"{source}: phases[{i}]"
            if not isinstance(phase, dict):
                raise RecipeError(f"{where} must be a mapping, got {phase!r}.")
            _check_keys(phase, Phase, where, required=("name", "num_steps", "max_seq_length",
                                                        "max_predictions_per_seq"))
            phases.append(Phase(**phase))
        values["phases"] = tuple(phases)
        if "model" in values:
            values["model"] = _model_spec(values["model"], f"{source}: model")
        for key, spec_cls in (("optimizer", OptimizerSpec), ("dynamic_masking", DynamicMaskingSpec),
                              ("eval", EvalSpec)):
            if key in values:
                section = values[key]
                if not isinstance(section, dict):
                    raise RecipeError(f"{source}: {key} must be a mapping, got {section!r}.")
                _check_keys(section, spec_cls, f"{source}: {key}")
                if "exclude_from_weight_decay" in section:
                    section = dict(section, exclude_from_weight_decay=tuple(section["exclude_from_weight_decay"]))
                values[key] = spec_cls(**section)
        try:
            return cls(**values)
        except RecipeError as e:
            raise RecipeError(f"{source}: {e}") from None

    def to_dict(self):
        values = dataclasses.asdict(self)
        model = values.pop("model")
        values["model"] = {"preset": model["preset"], "bert_config_file": model["bert_config_file"],
                           **model["overrides"]}
        values["phases"] = [dict(p) for p in values["phases"]]
        values["optimizer"]["exclude_from_weight_decay"] = list(values["optimizer"]["exclude_from_weight_decay"])
        return values

    def with_overrides(self, **flags):
        """A copy with command-line overrides applied (None means "not given").

        Recipe-wide: bert_config_file, init_checkpoint, vocab_file, train_batch_size, num_train_steps,
        num_warmup_steps, learning_rate, save_checkpoints_steps, iterations_per_loop, max_micro_batch_size,
        mixed_precision, jit_compile, use_next_sentence, seed, optimizer (a name), dynamic_masking (a bool),
        eval_input_file. Per phase: input_file, max_seq_length, max_predictions_per_seq, each a list with one value
        per phase in order (or a single value for a one-phase recipe). A new num_train_steps rescales the phases
        in proportion (900k/100k -> 90%/10%).
        """
        flags = {k: v for k, v in flags.items() if v is not None}
        changes = {}
        for key in ("init_checkpoint", "vocab_file", "train_batch_size", "num_warmup_steps", "learning_rate",
                    "save_checkpoints_steps", "iterations_per_loop", "max_micro_batch_size", "mixed_precision",
                    "jit_compile", "use_next_sentence", "seed"):
            if key in flags:
                changes[key] = flags.pop(key)
        if "bert_config_file" in flags:
            changes["model"] = ModelSpec(preset=None, bert_config_file=flags.pop("bert_config_file"),
                                         overrides=self.model.overrides)
        if "optimizer" in flags:
            changes["optimizer"] = dataclasses.replace(self.optimizer, name=flags.pop("optimizer"))
        if "dynamic_masking" in flags:
            changes["dynamic_masking"] = dataclasses.replace(self.dynamic_masking,
                                                             enabled=bool(flags.pop("dynamic_masking")))
        if "eval_input_file" in flags:
            changes["eval"] = dataclasses.replace(self.eval, input_file=flags.pop("eval_input_file"))
        phases = list(self.phases)
        if "num_train_steps" in flags:
            total = flags.pop("num_train_steps")
            phases = _rescale_phases(phases, total)
            changes["num_train_steps"] = total
            if "num_warmup_steps" not in changes and self.num_warmup_steps > total:
                raise RecipeError(f"num_train_steps={total} is below the recipe's num_warmup_steps="
                                  f"{self.num_warmup_steps}: also pass --num_warmup_steps.")
        for key in ("input_file", "max_seq_length", "max_predictions_per_seq"):
            if key not in flags:
                continue
            values = flags.pop(key)
            values = list(values) if isinstance(values, (list, tuple)) else [values]
            if len(values) != len(phases):
                raise RecipeError(
                    f"--{key} was given {len(values)} time(s) but recipe {self.name!r} has {len(phases)} phases "
                    f"({', '.join(p.name for p in phases)}): give it once per phase, in order.")
            phases = [dataclasses.replace(p, **{key: v}) for p, v in zip(phases, values)]
        if "train_batch_size" in changes:
            phases = [dataclasses.replace(p, train_batch_size=None) for p in phases]
        if flags:
            raise RecipeError(f"Unknown override(s) {sorted(flags)}.")
        changes["phases"] = tuple(phases)
        return dataclasses.replace(self, **changes)

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

    def bert_config(self, init_checkpoint_config=None):
        """The `BertConfig` of the run: `bert_config_file`, else the init checkpoint's config, else the preset;
        then the recipe's field overrides. A preset takes its vocab_size from `vocab_file`."""
        spec = self.model
        if spec.bert_config_file:
            config = read_bert_config(spec.bert_config_file)
        elif init_checkpoint_config is not None:
            logging.info("Model architecture from init_checkpoint %s.", self.init_checkpoint)
            config = init_checkpoint_config
        else:
            config = BertConfig.preset(spec.preset)
            if self.vocab_file:
                config = config.replace(vocab_size=count_vocab(self.vocab_file))
        try:
            config = config.replace(**spec.overrides)
        except ValueError as e:
            raise RecipeError(f"Recipe {self.name!r}: model: {e}") from None
        if self.vocab_file and count_vocab(self.vocab_file) > config.vocab_size:
            raise RecipeError(f"vocab_file {self.vocab_file} has {count_vocab(self.vocab_file)} tokens but the "
                              f"model's vocab_size is {config.vocab_size}: use the model's vocab or a config with "
                              f"a matching vocab_size.")
        for phase in self.phases:
            if phase.max_seq_length > config.max_position_embeddings:
                raise RecipeError(f"phases[{phase.name}].max_seq_length={phase.max_seq_length} exceeds the model's "
                                  f"max_position_embeddings={config.max_position_embeddings}.")
        return config


def load_recipe(name_or_path):
    """A recipe from a YAML file, or by name from configs/pretrain/ ("bert_base_paper", "demo_cpu", ...)."""
    path = name_or_path
    if not tf.io.gfile.exists(path):
        named = os.path.join(configs_dir(), "pretrain", f"{name_or_path}.yaml")
        if not os.path.exists(named):
            available = sorted(f[:-5] for f in os.listdir(os.path.join(configs_dir(), "pretrain"))
                               if f.endswith(".yaml"))
            raise RecipeError(f"No recipe file {name_or_path!r}: pass a YAML path or one of {available}.")
        path = named
    with tf.io.gfile.GFile(path, "r") as f:
        try:
            values = yaml.safe_load(f.read())
        except yaml.YAMLError as e:
            raise RecipeError(f"{path} is not valid YAML: {e}") from None
    if not isinstance(values, dict):
        raise RecipeError(f"{path} must hold a mapping of recipe fields, got {type(values).__name__}.")
    return Recipe.from_dict(values, source=os.path.basename(path))


def read_bert_config(path):
    """A `bert_config.json` (this package's or an original release's, see `BertConfig.from_json_dict`)."""
    with tf.io.gfile.GFile(path, "r") as f:
        return BertConfig.from_json_string(f.read(), path)


def count_vocab(path):
    with tf.io.gfile.GFile(path, "r") as f:
        return sum(1 for _ in f)


def _model_spec(values, where):
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
    if bool(preset) == bool(config_file):
        raise RecipeError(f"{where}: give exactly one of preset ({preset!r}) and bert_config_file "
                          f"({config_file!r}).")
    return ModelSpec(preset=preset, bert_config_file=config_file, overrides=values)


def _check_keys(values, cls, where, required=()):
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise RecipeError(f"{where}: unknown field(s) {unknown}; known fields are {sorted(fields)}.")
    missing = [k for k in required if k not in values]
    if missing:
        raise RecipeError(f"{where}: missing field(s) {missing}.")


def _rescale_phases(phases, total):
    if not isinstance(total, int) or total < len(phases):
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


def _positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _validate(recipe):
    def fail(field, value, rule):
        raise RecipeError(f"{field}={value!r} {rule}.")

    for field in ("train_batch_size", "num_train_steps", "save_checkpoints_steps", "keep_checkpoint_max",
                  "iterations_per_loop", "seed", "shuffle_buffer"):
        if not _positive_int(getattr(recipe, field)) and not (field == "seed" and getattr(recipe, field) == 0):
            fail(field, getattr(recipe, field), "must be a positive integer")
    if recipe.max_micro_batch_size is not None and not _positive_int(recipe.max_micro_batch_size):
        fail("max_micro_batch_size", recipe.max_micro_batch_size, "must be a positive integer or null")
    if not isinstance(recipe.num_warmup_steps, int) or not 0 <= recipe.num_warmup_steps <= recipe.num_train_steps:
        fail("num_warmup_steps", recipe.num_warmup_steps, f"must be an integer in [0, num_train_steps="
             f"{recipe.num_train_steps}]")
    if not isinstance(recipe.learning_rate, (int, float)) or not recipe.learning_rate > 0:
        fail("learning_rate", recipe.learning_rate, "must be a positive number (the paper uses 1e-4)")
    if recipe.mixed_precision not in MIXED_PRECISION:
        fail("mixed_precision", recipe.mixed_precision, f"must be one of {', '.join(MIXED_PRECISION)}")
    for field in ("jit_compile", "use_next_sentence"):
        if not isinstance(getattr(recipe, field), bool):
            fail(field, getattr(recipe, field), "must be true or false")
    opt = recipe.optimizer
    if opt.name not in OPTIMIZERS:
        fail("optimizer.name", opt.name, f"must be one of {', '.join(OPTIMIZERS)}")
    for field in ("beta_1", "beta_2"):
        if not 0.0 <= getattr(opt, field) < 1.0:
            fail(f"optimizer.{field}", getattr(opt, field), "must lie in [0, 1)")
    if not opt.epsilon > 0:
        fail("optimizer.epsilon", opt.epsilon, "must be positive (the original uses 1e-6)")
    if not opt.weight_decay_rate >= 0:
        fail("optimizer.weight_decay_rate", opt.weight_decay_rate, "must be >= 0")
    if opt.clip_norm is not None and not opt.clip_norm > 0:
        fail("optimizer.clip_norm", opt.clip_norm, "must be positive or null (no clipping)")
    names = set()
    for i, phase in enumerate(recipe.phases):
        where = f"phases[{i}]"
        if not isinstance(phase, Phase):
            fail(where, phase, "must be a Phase")
        if phase.name in names:
            fail(f"{where}.name", phase.name, "is used twice: give each phase its own name")
        names.add(phase.name)
        for field in ("num_steps", "max_seq_length", "max_predictions_per_seq"):
            if not _positive_int(getattr(phase, field)):
                fail(f"{where}.{field}", getattr(phase, field), "must be a positive integer")
        if phase.max_predictions_per_seq > phase.max_seq_length:
            fail(f"{where}.max_predictions_per_seq", phase.max_predictions_per_seq,
                 f"must not exceed max_seq_length={phase.max_seq_length}")
        if phase.train_batch_size is not None and not _positive_int(phase.train_batch_size):
            fail(f"{where}.train_batch_size", phase.train_batch_size, "must be a positive integer or null")
    total = sum(p.num_steps for p in recipe.phases)
    if total != recipe.num_train_steps:
        fail("num_train_steps", recipe.num_train_steps,
             f"must equal the sum of the phases' num_steps ({total}); fix one of them")
    dm = recipe.dynamic_masking
    if not 0.0 < dm.masked_lm_prob < 1.0:
        fail("dynamic_masking.masked_lm_prob", dm.masked_lm_prob, "must lie in (0, 1)")
    ev = recipe.eval
    for field in ("eval_batch_size", "max_eval_steps"):
        if not _positive_int(getattr(ev, field)):
            fail(f"eval.{field}", getattr(ev, field), "must be a positive integer")


def check_ready(recipe):
    """Checks what a run needs beyond a valid recipe: every phase has input files, dynamic masking has a vocab."""
    for phase in recipe.phases:
        if not phase.input_file:
            raise RecipeError(f"Phase {phase.name!r} of recipe {recipe.name!r} has no input_file: set it in the "
                              f"recipe or pass --input_file once per phase (in order).")
    if recipe.dynamic_masking.enabled and not recipe.vocab_file:
        raise RecipeError("dynamic_masking needs the vocab (to find [MASK], [CLS], [SEP] and word pieces): pass "
                          "--vocab_file or set vocab_file in the recipe.")

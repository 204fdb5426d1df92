"""`BertConfig`: the fields of the original `bert_config.json`, validated at construction."""

import dataclasses
import json
import math
import os
from importlib import resources

from absl import logging

from bert_tf.errors import InputError

# Activation names are explicit because "gelu" meant different things to different codebases: the original
# TF1 code's "gelu" is the tanh approximation, HF's "gelu" is the exact erf form.
ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "tanh", "linear")
# In a bert_config.json both GELUs are "gelu" (so the original modeling.py reads the tanh form correctly) and this
# field says which one it is; a file without it is an original release, whose "gelu" is the tanh form.
GELU_APPROXIMATION = "gelu_approximation"
_GELU_BY_APPROXIMATION = {"tanh": "gelu_tanh", "none": "gelu"}
PRESETS = ("tiny", "mini", "small", "medium", "base", "large")


def configs_dir():
    """The folder holding `model/*.json` and `pretrain/*.yaml` (installed as package data `bert_tf.configs`)."""
    try:
        path = resources.files("bert_tf.configs")
        if path.is_dir():
            return str(path)
    except ModuleNotFoundError:
        pass
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs")


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyper-parameters of a BERT encoder, with the names of the original `bert_config.json`.

    Args:
        vocab_size: WordPiece vocabulary size (30522 for the released uncased models).
        hidden_size: width H of every layer.
        num_hidden_layers: number L of Transformer blocks.
        num_attention_heads: number A of heads; must divide `hidden_size`.
        intermediate_size: width of the feed-forward layer (4H in the released models).
        hidden_act: "gelu_tanh" (the original code's "gelu"), "gelu" (exact erf), "relu", "tanh", "linear".
        hidden_dropout_prob: dropout after embeddings, attention output and feed-forward output.
        attention_probs_dropout_prob: dropout on the attention probabilities.
        max_position_embeddings: number of learned positions (512).
        type_vocab_size: number of segment ids (2 in the released configs).
        initializer_range: stddev of the truncated-normal initializer (0.02).
        layer_norm_eps: LayerNorm epsilon (1e-12 in the original code).
        position_embedding_type: "learned" (original) or "sinusoidal" (option).
        pre_layer_norm: False for the original post-LN blocks; True for pre-LN (option).

    Example:
    >>> config = BertConfig.preset("tiny")
    >>> config.hidden_size, config.num_hidden_layers
    (128, 2)
    >>> BertConfig(hidden_size=100, num_attention_heads=3)
    Traceback (most recent call last):
    ...
    bert_tf.errors.InputError: hidden_size=100 is not divisible by num_attention_heads=3: choose a head count that
    divides it.
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu_tanh"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    position_embedding_type: str = "learned"
    pre_layer_norm: bool = False

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InputError(f"{name}={value!r} must be a positive integer.")
        if self.hidden_size % self.num_attention_heads:
            raise InputError(
                f"hidden_size={self.hidden_size} is not divisible by num_attention_heads="
                f"{self.num_attention_heads}: choose a head count that divides it.")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(f"{name}={value!r} must be a finite number: write it without quotes, e.g. "
                                 f"{getattr(BertConfig, name)!r}.")
        if not isinstance(self.pre_layer_norm, bool):
            raise InputError(f"pre_layer_norm={self.pre_layer_norm!r} must be true or false.")
        if self.hidden_act not in ACTIVATIONS:
            raise InputError(f"hidden_act={self.hidden_act!r} is unknown: use one of {', '.join(ACTIVATIONS)}.")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise InputError(f"{name}={value!r} must be in [0, 1).")
        for name in ("initializer_range", "layer_norm_eps"):
            if getattr(self, name) <= 0:
                raise InputError(f"{name}={getattr(self, name)!r} must be positive.")
        if self.position_embedding_type not in ("learned", "sinusoidal"):
            raise InputError(f"position_embedding_type={self.position_embedding_type!r} must be "
                             "'learned' or 'sinusoidal'.")

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        """Builds a config from a dict in this package's naming; unknown keys are an error."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise InputError(f"Unknown BertConfig field(s) {unknown}: known fields are {sorted(fields)}.")
        return cls(**values)

    def to_json_dict(self):
        """The fields as a `bert_config.json` holds them: the original's names and values, so the original
        `modeling.py` reads the file, plus `gelu_approximation` ("tanh" or "none") when the activation is a GELU.

        >>> BertConfig.preset("tiny").to_json_dict()["hidden_act"], BertConfig.preset("tiny").to_json_dict()[
        ...     "gelu_approximation"]
        ('gelu', 'tanh')
        """
        values = self.to_dict()
        if self.hidden_act in _GELU_BY_APPROXIMATION.values():
            values[GELU_APPROXIMATION] = "tanh" if self.hidden_act == "gelu_tanh" else "none"
            values["hidden_act"] = "gelu"
        return values

    @classmethod
    def from_json_dict(cls, values, source="bert_config.json"):
        """The config a `bert_config.json`'s dict describes: this package's files (see `to_json_dict`), the
        original releases (their "gelu" is the tanh form; keys this package does not model, e.g.
        `directionality`, are ignored with a log line) and this package's earlier files, which named the tanh
        form "gelu_tanh" and the exact form "gelu" and carry `position_embedding_type`.

        >>> BertConfig.from_json_dict({"hidden_act": "gelu", "gelu_approximation": "none"}).hidden_act
        'gelu'
        >>> BertConfig.from_json_dict({"hidden_act": "gelu"}).hidden_act  # an original release
        'gelu_tanh'
        """
        values = dict(values)
        approximation = values.pop(GELU_APPROXIMATION, None)
        act = values.get("hidden_act")
        if approximation is not None:
            if act != "gelu" or approximation not in _GELU_BY_APPROXIMATION:
                raise InputError(
                    f"{source}: {GELU_APPROXIMATION}={approximation!r} with hidden_act={act!r}: the field goes with "
                    f"hidden_act \"gelu\" and is one of {', '.join(_GELU_BY_APPROXIMATION)}.")
            values["hidden_act"] = _GELU_BY_APPROXIMATION[approximation]
        elif act == "gelu_new":
            values["hidden_act"] = "gelu_tanh"
        elif act == "gelu" and "position_embedding_type" not in values:
            values["hidden_act"] = "gelu_tanh"
        fields = {f.name for f in dataclasses.fields(cls)}
        ignored = sorted(set(values) - fields)
        if ignored:
            logging.info("Ignoring %s keys %s", source, ignored)
        return cls(**{k: v for k, v in values.items() if k in fields})

    def to_json_string(self):
        return json.dumps(self.to_json_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path):
        """Writes a `bert_config.json` (see `to_json_dict`); model directories write theirs through
        `bert_tf.model_dir`, which also handles gs:// paths."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json_string())

    @classmethod
    def from_json_string(cls, text, source="bert_config.json"):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{source} is not valid JSON ({e}): expected a bert_config.json.") from e
        if not isinstance(values, dict):
            raise InputError(f"{source} holds {type(values).__name__}, not a mapping: expected a bert_config.json.")
        return cls.from_json_dict(values, source)

    @classmethod
    def from_json_file(cls, path):
        """Reads a `bert_config.json`: this package's, or one released with Google's checkpoints (see
        `from_json_dict`); the activation is never changed by a write and read back."""
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise InputError(f"Cannot read BertConfig file {path}: {e.strerror}.") from e
        return cls.from_json_string(text, path)

    @classmethod
    def preset(cls, name, **overrides):
        """One of tiny, mini, small, medium, base, large (configs/model/NAME.json), with optional overrides."""
        if name not in PRESETS:
            raise InputError(f"Unknown preset {name!r}: use one of {', '.join(PRESETS)}.")
        config = cls.from_json_file(os.path.join(configs_dir(), "model", f"{name}.json"))
        return dataclasses.replace(config, **overrides) if overrides else config

    def replace(self, **overrides):
        return dataclasses.replace(self, **overrides)

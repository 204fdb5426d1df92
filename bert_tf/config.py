"""`BertConfig`: the fields of the original `bert_config.json`, checked at construction by the config schema."""

import dataclasses
import json
import os
from importlib import resources

from absl import logging

from bert_tf.config_schema import Section
from bert_tf.errors import InputError
from bert_tf.file_format import with_format_version, without_format_version

# Activation names are explicit because "gelu" meant different things to different codebases: the original
# TF1 code's "gelu" is the tanh approximation, HF's "gelu" is the exact erf form.
ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "tanh", "linear")
# In a bert_config.json both GELUs are "gelu" (so the original modeling.py reads the tanh form correctly) and this
# field says which one it is; a file without it is an original release, whose "gelu" is the tanh form.
GELU_APPROXIMATION = "gelu_approximation"
_GELU_BY_APPROXIMATION = {"tanh": "gelu_tanh", "none": "gelu"}
PRESETS = ("tiny", "mini", "small", "medium", "base", "large")
POSITION_EMBEDDINGS = ("learned", "sinusoidal")
_POSITIVE_INTEGERS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                      "max_position_embeddings", "type_vocab_size")


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
class BertConfig(Section):
    """Hyper-parameters of a BERT encoder, with the names of the original `bert_config.json`; a `Section` of the
    config schema, so its values are checked when it is built and errors name the field, the value and the fix.

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
    bert_tf.config_schema.ConfigError: hidden_size=100 is not divisible by num_attention_heads=3: choose a head count \
that divides it.
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

    def _rules(self):
        positive = "must be a positive integer"
        heads = self.num_attention_heads
        return (*((name, getattr(self, name) > 0, positive) for name in _POSITIVE_INTEGERS),
                ("hidden_size", heads <= 0 or self.hidden_size % heads == 0,
                 f"is not divisible by num_attention_heads={heads}: choose a head count that divides it"),
                ("hidden_act", self.hidden_act in ACTIVATIONS, f"must be one of {', '.join(ACTIVATIONS)}"),
                ("hidden_dropout_prob", 0.0 <= self.hidden_dropout_prob < 1.0, "must be in [0, 1)"),
                ("attention_probs_dropout_prob", 0.0 <= self.attention_probs_dropout_prob < 1.0, "must be in [0, 1)"),
                ("initializer_range", self.initializer_range > 0, "must be positive"),
                ("layer_norm_eps", self.layer_norm_eps > 0, "must be positive"),
                ("position_embedding_type", self.position_embedding_type in POSITION_EMBEDDINGS,
                 f"must be one of {', '.join(POSITION_EMBEDDINGS)}"))

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    def to_json_dict(self):
        """The fields as a `bert_config.json` holds them: the original's names and values, so the original
        `modeling.py` reads the file, plus `gelu_approximation` ("tanh" or "none") when the activation is a GELU and
        the package's format_version (`bert_tf.file_format`).

        >>> BertConfig.preset("tiny").to_json_dict()["hidden_act"], BertConfig.preset("tiny").to_json_dict()[
        ...     "gelu_approximation"]
        ('gelu', 'tanh')
        """
        values = self.to_dict()
        if self.hidden_act in _GELU_BY_APPROXIMATION.values():
            values[GELU_APPROXIMATION] = "tanh" if self.hidden_act == "gelu_tanh" else "none"
            values["hidden_act"] = "gelu"
        return with_format_version(values)

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
        values = without_format_version(values, source)
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
        return cls.from_dict({k: v for k, v in values.items() if k in fields}, source)

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
        return config.replace(**overrides) if overrides else config

    def replace(self, **fields):
        """A copy with `fields` replaced, checked as a new config is (`override` takes paths and `--set` strings).

        >>> BertConfig.preset("tiny").replace(hidden_dropout_prob=0.0).hidden_dropout_prob
        0.0
        """
        return dataclasses.replace(self, **fields)

"""BertConfig: presets, the original bert_config.json, and validation errors that name the field."""

import json
import os

import pytest

from bert_tf import BertConfig
from bert_tf.config import configs_dir

# (layers, hidden, heads) of the released models and the Turc et al. miniatures (docs/original_recipe.md).
PRESET_SHAPES = {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8), "medium": (8, 512, 8),
                 "base": (12, 768, 12), "large": (24, 1024, 16)}


@pytest.mark.parametrize("name", sorted(PRESET_SHAPES))
def test_presets_match_the_released_shapes(name):
    config = BertConfig.preset(name)
    layers, hidden, heads = PRESET_SHAPES[name]
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (layers, hidden, heads)
    assert config.intermediate_size == 4 * hidden
    assert config.vocab_size == 30522 and config.max_position_embeddings == 512 and config.type_vocab_size == 2
    assert config.hidden_act == "gelu_tanh" and config.layer_norm_eps == 1e-12
    assert config.initializer_range == 0.02 and config.hidden_dropout_prob == 0.1


ORIGINAL_BASE = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                 "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
                 "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
                 "type_vocab_size": 2, "vocab_size": 30522, "directionality": "bidi"}


def original_activation(values):
    """What google-research/bert's modeling.py computes for a bert_config.json: its `get_activation` knows
    "linear", "relu", "gelu" (the tanh form) and "tanh", and raises on anything else."""
    act = values["hidden_act"].lower()
    if act not in ("linear", "relu", "gelu", "tanh"):
        raise ValueError(f"Unsupported activation: {act}")
    return "gelu_tanh" if act == "gelu" else act


def test_original_bert_config_json_maps_gelu_to_the_tanh_form(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(ORIGINAL_BASE))
    config = BertConfig.from_json_file(str(path))
    assert config.hidden_act == "gelu_tanh"
    assert config == BertConfig.preset("base")


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_tanh", "relu", "tanh", "linear"])
def test_json_round_trip_never_changes_the_activation(tmp_path, hidden_act):
    config = BertConfig.preset("tiny", hidden_act=hidden_act, layer_norm_eps=1e-7, pre_layer_norm=True)
    path = tmp_path / "bert_config.json"
    config.to_json_file(str(path))
    assert BertConfig.from_json_file(str(path)) == config
    assert BertConfig.from_json_string(config.to_json_string()) == config
    written = json.loads(path.read_text())
    if hidden_act.startswith("gelu"):
        # The original reads "gelu" (its tanh form); the explicit field says which GELU it is.
        assert written["hidden_act"] == "gelu"
        assert written["gelu_approximation"] == ("tanh" if hidden_act == "gelu_tanh" else "none")
    else:
        assert written["hidden_act"] == hidden_act and "gelu_approximation" not in written
    assert original_activation(written) == ("gelu_tanh" if hidden_act.startswith("gelu") else hidden_act)


def test_earlier_files_of_this_package_keep_their_activation():
    # Before the explicit field, this package wrote "gelu_tanh" for the tanh form and "gelu" for the exact form,
    # always with position_embedding_type (an original release never has it).
    earlier = dict(BertConfig.preset("tiny").to_dict(), hidden_act="gelu")
    assert BertConfig.from_json_dict(earlier).hidden_act == "gelu"
    assert BertConfig.from_json_dict(dict(earlier, hidden_act="gelu_tanh")).hidden_act == "gelu_tanh"
    assert BertConfig.from_json_dict(dict(ORIGINAL_BASE, hidden_act="gelu_new")).hidden_act == "gelu_tanh"


@pytest.mark.parametrize("values, message", [
    ({"hidden_act": "relu", "gelu_approximation": "tanh"}, "gelu_approximation='tanh' with hidden_act='relu'"),
    ({"hidden_act": "gelu", "gelu_approximation": "erf"}, "is one of tanh, none"),
])
def test_inconsistent_gelu_fields_are_refused(values, message):
    with pytest.raises(ValueError, match=message):
        BertConfig.from_json_dict(values)


def test_preset_files_are_read_by_the_original_as_the_tanh_gelu():
    for name in ("tiny", "base", "large"):
        with open(os.path.join(configs_dir(), "model", f"{name}.json")) as f:
            assert original_activation(json.load(f)) == "gelu_tanh"


@pytest.mark.parametrize("overrides, message", [
    ({"hidden_size": 100, "num_attention_heads": 3}, "hidden_size=100 is not divisible by num_attention_heads=3"),
    ({"hidden_size": 0}, "hidden_size=0 must be a positive integer"),
    ({"num_hidden_layers": -1}, "num_hidden_layers=-1 must be a positive integer"),
    ({"vocab_size": 2.5}, "vocab_size=2.5 must be an integer."),
    ({"hidden_act": "swish2"}, "hidden_act='swish2' must be one of gelu, gelu_tanh, relu, tanh, linear."),
    ({"hidden_dropout_prob": 1.0}, "hidden_dropout_prob=1.0 must be in [0, 1)"),
    ({"layer_norm_eps": 0.0}, "layer_norm_eps=0.0 must be positive"),
    ({"layer_norm_eps": "tiny"}, "layer_norm_eps='tiny' must be a finite number."),
    ({"layer_norm_eps": "1e-7"}, "layer_norm_eps='1e-7' must be a finite number: write it without quotes"),
    ({"hidden_dropout_prob": float("nan")}, "hidden_dropout_prob=nan must be a finite number"),
    ({"pre_layer_norm": "yes"}, "pre_layer_norm='yes' must be true or false"),
])
def test_invalid_configs_fail_at_construction_naming_the_field(overrides, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        BertConfig(**overrides)


def test_unknown_preset_and_unreadable_file_give_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="Unknown preset 'huge': use one of tiny, mini"):
        BertConfig.preset("huge")
    with pytest.raises(ValueError, match="Cannot read BertConfig file"):
        BertConfig.from_json_file(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        BertConfig.from_json_file(str(bad))
    with pytest.raises(ValueError, match=r"^BertConfig: unknown field\(s\) \['hiden_size'\]; known fields are "
                                         r"\[.*'hidden_size'"):
        BertConfig.from_dict({"hiden_size": 8})

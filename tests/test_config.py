"""BertConfig: presets, the original bert_config.json, and validation errors that name the field."""

import json

import pytest

from bert_tf import BertConfig

# (layers, hidden, heads) of the released models and the Turc et al. miniatures (shared/RECIPE.md).
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


def test_original_bert_config_json_maps_gelu_to_the_tanh_form(tmp_path):
    original = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
                "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
                "type_vocab_size": 2, "vocab_size": 30522, "directionality": "bidi"}
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(original))
    config = BertConfig.from_json_file(str(path))
    assert config.hidden_act == "gelu_tanh"
    assert config == BertConfig.preset("base")
    # This package's own files keep "gelu" as the exact form.
    own = tmp_path / "own.json"
    BertConfig.preset("tiny", hidden_act="gelu").to_json_file(str(own))
    assert BertConfig.from_json_file(str(own), original=False).hidden_act == "gelu"


@pytest.mark.parametrize("overrides, message", [
    ({"hidden_size": 100, "num_attention_heads": 3}, "hidden_size=100 is not divisible by num_attention_heads=3"),
    ({"hidden_size": 0}, "hidden_size=0 must be a positive integer"),
    ({"num_hidden_layers": -1}, "num_hidden_layers=-1 must be a positive integer"),
    ({"vocab_size": 2.5}, "vocab_size=2.5 must be a positive integer"),
    ({"hidden_act": "swish2"}, "hidden_act='swish2' is unknown"),
    ({"hidden_dropout_prob": 1.0}, "hidden_dropout_prob=1.0 must be in [0, 1)"),
    ({"layer_norm_eps": 0.0}, "layer_norm_eps=0.0 must be positive"),
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
    with pytest.raises(ValueError, match=r"Unknown BertConfig field\(s\) \['hiden_size'\]"):
        BertConfig.from_dict({"hiden_size": 8})

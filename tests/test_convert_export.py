"""`bert-convert --to hf` and `--to keras_hub`: the folders load in transformers (BertForPreTraining, heads
included) and keras-hub (BertBackbone, BertTokenizer) and compute what our model computes, to 1e-5; what keras-hub
cannot express (the exact GELU) is refused with the reason."""

import json
import os

import keras
import numpy as np
import pytest

from bert_tf import BertPretrainer
from bert_tf.model_dir import write_model_dir
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.text.tokenizer_settings import TokenizerSettings
from helpers import run_cli, tiny_config

# Round trips through transformers and keras-hub: the large tier (pytest.ini).
pytestmark = pytest.mark.large

TOLERANCE = 1e-5
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "the", "cat", "sat", "##s", "on", "mat"]


def model_dir(root, hidden_act, seed):
    """A random tiny pre-trainer (every weight, heads included, non-trivial) written as a model directory."""
    keras.utils.set_random_seed(seed)
    vocab = root / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in TOKENS + [f"w{i}" for i in range(64 - len(TOKENS))]))
    pretrainer = BertPretrainer(tiny_config(hidden_act=hidden_act))
    pretrainer(example_inputs())
    # Fresh LayerNorms and biases are ones and zeros: random values make a wrong mapping visible.
    rng = np.random.default_rng(seed)
    for variable in pretrainer.weights:
        if "seed_generator" not in variable.path:
            variable.assign(keras.ops.convert_to_numpy(variable) + rng.normal(0, 0.05, variable.shape))
    write_model_dir(str(root / "model"), pretrainer, str(vocab))
    return pretrainer


def example_inputs():
    ids = np.array([[2, 5, 6, 3, 7, 8, 9, 3], [2, 12, 10, 3, 0, 0, 0, 0]], np.int32)
    mask = (ids > 0).astype(np.int32)
    types = np.array([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0, 0]], np.int32)
    positions = np.tile(np.arange(8, dtype=np.int32), (2, 1))
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types, "masked_lm_positions": positions}


def ours(pretrainer):
    x = example_inputs()
    outputs = pretrainer(x, training=False)
    encoded = pretrainer.encoder({k: x[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
    return {"sequence_output": encoded["sequence_output"], "pooled_output": encoded["pooled_output"],
            "mlm_logits": outputs["mlm_logits"], "nsp_logits": outputs["nsp_logits"]}


def max_diff(got, want, mask):
    got, want = np.asarray(got, np.float64), keras.ops.convert_to_numpy(want).astype(np.float64)
    if got.ndim == 3:  # per token: compare the real tokens (padding rows are not read by anyone)
        got, want = got[mask.astype(bool)], want[mask.astype(bool)]
    return float(np.max(np.abs(got - want)))


@pytest.mark.parametrize("hidden_act, hf_act", [("gelu_tanh", "gelu_new"), ("gelu", "gelu")])
def test_hf_export_loads_in_transformers_with_our_outputs(tmp_path, hidden_act, hf_act):
    import torch
    import transformers

    pretrainer = model_dir(tmp_path, hidden_act, seed=1)
    process = run_cli("convert", "--to=hf", f"--input={tmp_path / 'model'}", f"--output={tmp_path / 'hf'}")
    assert process.returncode == 0, process.stderr[-3000:]
    assert sorted(os.listdir(tmp_path / "hf")) == ["config.json", "model.safetensors", "tokenizer_config.json",
                                                   "vocab.txt"]
    with open(tmp_path / "hf" / "config.json") as f:
        assert json.load(f)["hidden_act"] == hf_act
    model, info = transformers.BertForPreTraining.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert not info["missing_keys"], info
    assert not info["unexpected_keys"], info
    model.eval()
    x = example_inputs()
    with torch.no_grad():
        torch_inputs = dict(input_ids=torch.tensor(x["input_word_ids"], dtype=torch.long),
                            attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
                            token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long))
        heads = model(**torch_inputs)
        encoded = model.bert(**torch_inputs)
    want = ours(pretrainer)
    diffs = {"sequence_output": max_diff(encoded.last_hidden_state, want["sequence_output"], x["input_mask"]),
             "pooled_output": max_diff(encoded.pooler_output, want["pooled_output"], x["input_mask"]),
             "mlm_logits": max_diff(heads.prediction_logits, want["mlm_logits"], x["input_mask"]),
             "nsp_logits": max_diff(heads.seq_relationship_logits, want["nsp_logits"], x["input_mask"])}
    print(hidden_act, "transformers vs ours, max |diff|:", diffs)
    assert max(diffs.values()) <= TOLERANCE, diffs
    tokenizer = transformers.BertTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert tokenizer("Hello cats")["input_ids"] == [2, 5, 8, 10, 3]


def test_keras_hub_export_loads_as_a_backbone_and_tokenizer_with_our_outputs(tmp_path):
    import keras_hub

    pretrainer = model_dir(tmp_path, "gelu_tanh", seed=2)
    process = run_cli("convert", "--to=keras_hub", f"--input={tmp_path / 'model'}", f"--output={tmp_path / 'kh'}")
    assert process.returncode == 0, process.stderr[-3000:]
    backbone = keras_hub.models.BertBackbone.from_preset(str(tmp_path / "kh"))
    tokenizer = keras_hub.models.BertTokenizer.from_preset(str(tmp_path / "kh"))
    x = example_inputs()
    got = backbone({"token_ids": x["input_word_ids"], "segment_ids": x["input_type_ids"],
                    "padding_mask": x["input_mask"]})
    want = ours(pretrainer)
    diffs = {name: max_diff(keras.ops.convert_to_numpy(got[name]), want[name], x["input_mask"])
             for name in ("sequence_output", "pooled_output")}
    print("keras-hub vs ours, max |diff|:", diffs)
    assert max(diffs.values()) <= TOLERANCE, diffs
    assert keras.ops.convert_to_numpy(tokenizer("hello cats")).tolist() == [5, 8, 10]


def test_keras_hub_export_refuses_the_exact_gelu(tmp_path):
    model_dir(tmp_path, "gelu", seed=3)
    process = run_cli("convert", "--to=keras_hub", f"--input={tmp_path / 'model'}", f"--output={tmp_path / 'kh'}")
    assert process.returncode == 2
    last = process.stderr.strip().splitlines()[-1]
    assert "keras-hub's BertBackbone always computes the tanh GELU" in last and "--to hf" in last
    assert not os.path.exists(tmp_path / "kh")


@pytest.mark.parametrize("settings", [TokenizerSettings.of(True), TokenizerSettings.of(True, strip_accents=False)],
                         ids=lambda settings: settings.describe())
def test_exported_tokenizers_normalize_as_the_vocab_settings_say(tmp_path, settings):
    """transformers' and keras-hub's tokenizers of the exported folders give our tokenizer's ids: "Café" is `cafe`
    under the original's uncased settings (keras-hub's own HF reader kept the accent), `café` with accents kept."""
    import keras_hub
    import transformers

    model_dir(tmp_path, "gelu_tanh", seed=4)
    vocab = tmp_path / "model" / "vocab.txt"
    tokens = vocab.read_text(encoding="utf-8").splitlines()[:-2] + ["cafe", "café"]
    vocab.write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")
    settings.write_beside(str(vocab))
    for target in ("hf", "keras_hub"):
        process = run_cli("convert", f"--to={target}", f"--input={tmp_path / 'model'}",
                          f"--output={tmp_path / target}")
        assert process.returncode == 0, process.stderr[-3000:]
    text = "Café hello CAFÉ"
    want = [tokens.index(token) for token in FullTokenizer(tokens, settings.do_lower_case,
                                                           settings.strip_accents).tokenize(text)]
    assert want[0] == tokens.index("cafe" if settings.strip_accents else "café")
    hf = transformers.BertTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert hf(text, add_special_tokens=False)["input_ids"] == want
    keras_hub_tokenizer = keras_hub.models.BertTokenizer.from_preset(str(tmp_path / "keras_hub"))
    assert keras.ops.convert_to_numpy(keras_hub_tokenizer(text)).tolist() == want

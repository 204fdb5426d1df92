"""A TF1-format BERT checkpoint (the original variable names and shapes, Adam slots, global_step), written here
with TF1's Saver, converts and reproduces an independent NumPy implementation of the original math."""

import json
import math
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.conversion import tf1_names
from bert_tf.conversion.from_tf1 import convert_tf1
from bert_tf.model_dir import load_encoder, load_pretrainer, read_config

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

# An original-style bert_config.json: "gelu" means the tanh approximation, no layer_norm_eps key (1e-12 in code).
ORIGINAL_CONFIG = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                   "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
                   "max_position_embeddings": 24, "num_attention_heads": 4, "num_hidden_layers": 2,
                   "type_vocab_size": 2, "vocab_size": 40}
H, V, L, A = 32, 40, 2, 4
UNUSED_TOKEN = 39  # never in the batch below: its embedding row only feeds the output layer


def original_shapes():
    """The TF1 variable names and shapes of the original modeling.py / run_pretraining.py for ORIGINAL_CONFIG."""
    c = ORIGINAL_CONFIG
    shapes = {
        "bert/embeddings/word_embeddings": (V, H),
        "bert/embeddings/token_type_embeddings": (c["type_vocab_size"], H),
        "bert/embeddings/position_embeddings": (c["max_position_embeddings"], H),
        "bert/embeddings/LayerNorm/gamma": (H,), "bert/embeddings/LayerNorm/beta": (H,),
        "bert/pooler/dense/kernel": (H, H), "bert/pooler/dense/bias": (H,),
        "cls/predictions/transform/dense/kernel": (H, H), "cls/predictions/transform/dense/bias": (H,),
        "cls/predictions/transform/LayerNorm/gamma": (H,), "cls/predictions/transform/LayerNorm/beta": (H,),
        "cls/predictions/output_bias": (V,),
        "cls/seq_relationship/output_weights": (2, H), "cls/seq_relationship/output_bias": (2,),
    }
    for i in range(L):
        p = f"bert/encoder/layer_{i}/"
        for name in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense"):
            shapes.update({p + name + "/kernel": (H, H), p + name + "/bias": (H,)})
        shapes.update({p + "intermediate/dense/kernel": (H, 64), p + "intermediate/dense/bias": (64,),
                       p + "output/dense/kernel": (64, H), p + "output/dense/bias": (H,)})
        for name in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes.update({p + name + "/gamma": (H,), p + name + "/beta": (H,)})
    return shapes


def random_weights(seed=0):
    # Larger than the 0.02 initializer so that activations reach the range where GELU variants, LayerNorm eps
    # and a wrong transpose show; gammas around 1, non-zero betas and biases.
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in original_shapes().items():
        value = rng.normal(0.0, 0.3 if len(shape) == 2 else 0.1, shape)
        weights[name] = (value + 1.0 if name.endswith("gamma") else value).astype(np.float32)
    return weights


def write_tf1_checkpoint(directory, weights, config=ORIGINAL_CONFIG, vocab_size=V):
    """A released-style directory: bert_model.ckpt.* written by TF1's Saver (with Adam slots and global_step as
    run_pretraining.py leaves them), the original bert_config.json and a vocab.txt."""
    os.makedirs(directory, exist_ok=True)
    with tf.Graph().as_default():
        var_list = {}
        for name, value in weights.items():
            var_list[name] = tf.compat.v1.Variable(value)
            var_list[name + "/adam_m"] = tf.compat.v1.Variable(np.full_like(value, 0.5))
            var_list[name + "/adam_v"] = tf.compat.v1.Variable(np.full_like(value, 0.25))
        var_list["global_step"] = tf.compat.v1.Variable(np.int64(1000))
        saver = tf.compat.v1.train.Saver(var_list)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, os.path.join(directory, "bert_model.ckpt"), write_meta_graph=False)
    with open(os.path.join(directory, "bert_config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(directory, "vocab.txt"), "w") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(vocab_size - 5)]))
    return directory


# ----------------------------------------------------------------------------------------------------------------
# The original math in NumPy (float64), following google-research/bert modeling.py and run_pretraining.py.

def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def reference(w, f, act=gelu_tanh, eps=1e-12):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    ids, mask, types = f["input_word_ids"], f["input_mask"], f["input_type_ids"]
    batch, length = ids.shape
    d = H // A
    x = (w["bert/embeddings/word_embeddings"][ids] + w["bert/embeddings/token_type_embeddings"][types]
         + w["bert/embeddings/position_embeddings"][None, :length])
    x = layer_norm(x, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"], eps)
    adder = (1.0 - mask[:, None, None, :]) * -10000.0  # padded keys
    encoder_outputs = []
    for i in range(L):
        p = f"bert/encoder/layer_{i}/"

        def dense(t, scope):
            return t @ w[p + scope + "/kernel"] + w[p + scope + "/bias"]

        def heads(t):
            return t.reshape(batch, length, A, d).transpose(0, 2, 1, 3)

        q, k, v = (heads(dense(x, f"attention/self/{n}")) for n in ("query", "key", "value"))
        probs = np.exp(log_softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + adder))
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, H)
        x = layer_norm(x + dense(context, "attention/output/dense"), w[p + "attention/output/LayerNorm/gamma"],
                       w[p + "attention/output/LayerNorm/beta"], eps)
        x = layer_norm(x + dense(act(dense(x, "intermediate/dense")), "output/dense"),
                       w[p + "output/LayerNorm/gamma"], w[p + "output/LayerNorm/beta"], eps)
        encoder_outputs.append(x)
    pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    gathered = x[np.arange(batch)[:, None], f["masked_lm_positions"]]
    t = act(gathered @ w["cls/predictions/transform/dense/kernel"] + w["cls/predictions/transform/dense/bias"])
    t = layer_norm(t, w["cls/predictions/transform/LayerNorm/gamma"], w["cls/predictions/transform/LayerNorm/beta"],
                   eps)
    mlm_logits = t @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
    nsp_logits = pooled @ w["cls/seq_relationship/output_weights"].T + w["cls/seq_relationship/output_bias"]
    ids, weights = f["masked_lm_ids"], f["masked_lm_weights"]
    per_example = -np.take_along_axis(log_softmax(mlm_logits), ids[..., None], -1)[..., 0]
    labels = f["next_sentence_labels"].reshape(-1)
    return {
        "sequence_output": x, "pooled_output": pooled, "encoder_outputs": encoder_outputs,
        "mlm_logits": mlm_logits, "nsp_logits": nsp_logits, "transformed": t,
        "masked_lm_loss": (weights * per_example).sum() / (weights.sum() + 1e-5),
        "masked_lm_accuracy": (weights * (mlm_logits.argmax(-1) == ids)).sum() / weights.sum(),
        "next_sentence_loss": -log_softmax(nsp_logits)[np.arange(len(labels)), labels].mean(),
        "next_sentence_accuracy": (nsp_logits.argmax(-1) == labels).mean(),
    }


def batch():
    """Three rows of lengths 10, 6 and 3 (padding in two), both segments, padded predictions (weight 0)."""
    rng = np.random.default_rng(7)
    lengths, length = [10, 6, 3], 10
    f = {k: np.zeros((3, length), np.int32) for k in ("input_word_ids", "input_mask", "input_type_ids")}
    for row, n in enumerate(lengths):
        f["input_word_ids"][row, :n] = rng.integers(5, UNUSED_TOKEN, n)
        f["input_word_ids"][row, 0], f["input_word_ids"][row, n - 1] = 2, 3
        f["input_mask"][row, :n] = 1
        f["input_type_ids"][row, n // 2:n] = 1
    f["masked_lm_positions"] = np.array([[1, 4, 7, 8], [2, 5, 0, 0], [1, 0, 0, 0]], np.int32)
    f["masked_lm_ids"] = np.array([[6, 9, 12, 30], [7, 22, 0, 0], [11, 0, 0, 0]], np.int32)
    f["masked_lm_weights"] = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], np.float32)
    f["next_sentence_labels"] = np.array([[0], [1], [1]], np.int32)
    return f


def max_diff(got, want):
    return float(np.max(np.abs(np.asarray(got, np.float64) - want)))


# ----------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("tf1")
    weights = random_weights()
    source = write_tf1_checkpoint(str(root / "uncased_L-2_H-32_A-4"), weights)
    result = convert_tf1(source, str(root / "converted"))
    return {"weights": weights, "source": source, "output": str(root / "converted"), "result": result}


def run(model, features):
    outputs = model(features, training=False)
    encoded = model.encoder({k: features[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
    return {**{k: v.numpy() for k, v in outputs.items()},
            "sequence_output": encoded["sequence_output"].numpy(), "pooled_output": encoded["pooled_output"].numpy(),
            "encoder_outputs": [t.numpy() for t in encoded["encoder_outputs"]],
            **{k: float(v) for k, v in model.compute_losses(outputs, features).items()}}


def test_conversion_copies_every_variable_and_skips_training_state(converted):
    result, weights = converted["result"], converted["weights"]
    assert result.converted == len(weights) == 5 + 16 * L + 2 + 7
    assert result.ignored == 2 * len(weights) + 1  # adam_m, adam_v per variable, and global_step
    assert result.fresh == []
    assert sorted(os.listdir(converted["output"])) == [
        "bert_config.json", "checkpoint", "ckpt-0.data-00000-of-00001", "ckpt-0.index", "vocab.txt"]
    model = load_pretrainer(converted["output"])
    values = {v.path: v.numpy() for v in model.weights}
    assert sorted(values) == sorted(weights)  # the Keras paths are the TF1 names
    for name, value in weights.items():
        np.testing.assert_array_equal(values[name], value, err_msg=name)


def test_outputs_and_losses_equal_the_original_math_in_numpy(converted):
    features = batch()
    got = run(load_pretrainer(converted["output"]), features)
    want = reference(converted["weights"], features)
    diffs = {k: max_diff(got[k], want[k]) for k in ("sequence_output", "pooled_output", "mlm_logits", "nsp_logits")}
    diffs.update({f"encoder_outputs[{i}]": max_diff(got["encoder_outputs"][i], want["encoder_outputs"][i])
                  for i in range(L)})
    diffs.update({k: abs(got[k] - want[k]) for k in ("masked_lm_loss", "next_sentence_loss")})
    print("max abs diff vs NumPy:", {k: f"{v:.2e}" for k, v in diffs.items()})
    assert max(diffs.values()) <= 1e-5, diffs
    assert abs(got["loss"] - want["masked_lm_loss"] - want["next_sentence_loss"]) <= 1e-5
    assert got["masked_lm_accuracy"] == pytest.approx(want["masked_lm_accuracy"], abs=1e-6)
    assert got["next_sentence_accuracy"] == pytest.approx(want["next_sentence_accuracy"], abs=1e-6)
    # The outputs are far from trivial: the comparison would see a wrong weight.
    assert np.std(want["mlm_logits"]) > 1.0 and np.std(want["sequence_output"]) > 0.5


def test_original_gelu_is_the_tanh_approximation(converted):
    assert read_config(converted["output"]).hidden_act == "gelu_tanh"
    features = batch()
    got = run(load_pretrainer(converted["output"]), features)
    exact = reference(converted["weights"], features, act=gelu_erf)
    assert max_diff(got["sequence_output"], exact["sequence_output"]) > 1e-4
    assert max_diff(got["mlm_logits"], exact["mlm_logits"]) > 1e-4


def test_layer_norm_epsilon_is_1e_12(converted):
    model = load_pretrainer(converted["output"])
    assert model.config.layer_norm_eps == 1e-12
    norms = [model.encoder.embeddings.layer_norm, model.masked_lm.layer_norm]
    norms += [norm for block in model.encoder.blocks for norm in (block.attention_layer_norm, block.output_layer_norm)]
    assert [norm.epsilon for norm in norms] == [1e-12] * (2 + 2 * L)
    # A row whose embedding sum has variance ~1e-4: eps 1e-6 instead of 1e-12 moves its LayerNorm output by ~0.5%.
    weights = dict(converted["weights"])
    table = weights["bert/embeddings/word_embeddings"].copy()
    noise = np.random.default_rng(3).normal(0.0, 0.01, H)
    table[4] = (noise - weights["bert/embeddings/token_type_embeddings"][0]
                - weights["bert/embeddings/position_embeddings"][1]).astype(np.float32)
    weights["bert/embeddings/word_embeddings"] = table
    model.encoder.embeddings.word_embeddings.assign(table)
    features = batch()
    features["input_word_ids"][:, 1] = 4
    got = run(model, features)
    assert max_diff(got["sequence_output"], reference(weights, features)["sequence_output"]) <= 1e-5
    assert max_diff(got["sequence_output"], reference(weights, features, eps=1e-6)["sequence_output"]) > 1e-4


def test_masked_lm_output_layer_is_the_live_word_embedding_table(converted):
    model = load_pretrainer(converted["output"])
    features = batch()
    before = run(model, features)
    want = reference(converted["weights"], features)
    # logits = transformed @ word_embeddings^T + output_bias, with no [V, H] matrix of the head's own.
    assert [v.path for v in model.weights if tuple(v.shape) == (V, H)] == ["bert/embeddings/word_embeddings"]
    # Changing the row of a token absent from the batch changes only that column of the logits, by exactly
    # transformed @ delta: the head reads the encoder's live table.
    delta = np.random.default_rng(4).normal(0.0, 1.0, H).astype(np.float32)
    table = model.encoder.word_embeddings
    table.assign(table.numpy() + np.eye(V, dtype=np.float32)[UNUSED_TOKEN][:, None] * delta)
    after = run(model, features)
    np.testing.assert_array_equal(after["sequence_output"], before["sequence_output"])
    change = after["mlm_logits"] - before["mlm_logits"]
    assert np.abs(np.delete(change, UNUSED_TOKEN, axis=-1)).max() == 0.0
    assert max_diff(change[..., UNUSED_TOKEN], want["transformed"] @ delta) <= 1e-5
    assert np.abs(change[..., UNUSED_TOKEN]).min() > 1e-3


def test_masked_lm_loss_divides_by_the_weight_sum_plus_1e_5(converted):
    model = load_pretrainer(converted["output"])
    features = batch()
    features["masked_lm_weights"] = np.zeros((3, 4), np.float32)
    features["masked_lm_weights"][0, 0] = 1e-5
    got = run(model, features)
    want = reference(converted["weights"], features)
    cross_entropy = -log_softmax(want["mlm_logits"][0, 0])[features["masked_lm_ids"][0, 0]]
    # sum(w * ce) / (sum(w) + 1e-5) = ce * 1e-5 / 2e-5: half the cross-entropy, where no epsilon gives all of it.
    assert want["masked_lm_loss"] == pytest.approx(cross_entropy / 2, rel=1e-6)
    assert got["masked_lm_loss"] == pytest.approx(cross_entropy / 2, rel=1e-4)
    features["masked_lm_weights"][:] = 0.0
    assert run(model, features)["masked_lm_loss"] == 0.0


def test_load_encoder_reads_the_converted_directory(converted):
    encoder = load_encoder(converted["output"])
    features = batch()
    outputs = encoder({k: features[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
    want = reference(converted["weights"], features)
    assert max_diff(outputs["pooled_output"].numpy(), want["pooled_output"]) <= 1e-5


def test_ignored_names_are_only_training_state():
    assert tf1_names.IGNORED.fullmatch("bert/encoder/layer_3/output/dense/kernel/adam_v")
    assert tf1_names.IGNORED.fullmatch("global_step")
    assert not tf1_names.IGNORED.fullmatch("bert/embeddings/word_embeddings")
    assert not tf1_names.IGNORED.fullmatch("output_weights")


def test_a_missing_variable_is_an_error_naming_it(tmp_path):
    weights = random_weights()
    del weights["bert/encoder/layer_1/output/LayerNorm/beta"]
    source = write_tf1_checkpoint(str(tmp_path / "source"), weights)
    with pytest.raises(ValueError, match=r"bert_model\.ckpt lacks bert/encoder/layer_1/output/LayerNorm/beta, "
                                         r"which a 2-layer BERT needs"):
        convert_tf1(source, str(tmp_path / "out"))


def test_an_unknown_variable_is_an_error_naming_it(tmp_path):
    # A run_classifier.py checkpoint: the classifier's output_weights/output_bias have no place in BertPretrainer.
    weights = random_weights()
    weights["output_weights"] = np.zeros((3, H), np.float32)
    source = write_tf1_checkpoint(str(tmp_path / "source"), weights)
    with pytest.raises(ValueError, match=r"holds output_weights, which no variable of a 2-layer BERT takes"):
        convert_tf1(source, str(tmp_path / "out"))
    # A config with fewer layers than the checkpoint: layer_1 has no place.
    config = dict(ORIGINAL_CONFIG, num_hidden_layers=1)
    source = write_tf1_checkpoint(str(tmp_path / "deeper"), random_weights(), config=config)
    with pytest.raises(ValueError, match=r"holds bert/encoder/layer_1/attention/output/LayerNorm/beta, .* and 11 more"):
        convert_tf1(source, str(tmp_path / "out"))


def test_a_shape_mismatch_is_an_error_naming_the_variable_and_shapes(tmp_path):
    source = write_tf1_checkpoint(str(tmp_path / "source"), random_weights(),
                                  config=dict(ORIGINAL_CONFIG, vocab_size=V + 1))
    with pytest.raises(ValueError, match=r"bert/embeddings/word_embeddings has shape \(40, 32\), but "
                                         r"bert/embeddings/word_embeddings has shape \(41, 32\) under the config"):
        convert_tf1(source, str(tmp_path / "out"))


def test_bad_directories_are_clear_errors(converted, tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        convert_tf1(str(tmp_path / "nowhere"), str(tmp_path / "out"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="No bert_config.json in"):
        convert_tf1(str(empty), str(tmp_path / "out"))
    shutil.copy(os.path.join(converted["source"], "bert_config.json"), empty)
    with pytest.raises(FileNotFoundError, match=r"No TF1 checkpoint in .*bert_model\.ckpt\.index"):
        convert_tf1(str(empty), str(tmp_path / "out"))
    with pytest.raises(FileExistsError, match="already holds a checkpoint"):
        convert_tf1(converted["source"], converted["output"])

"""The Keras layers: TF1 variable names, tied head, original loss, masks, options. Serialization, `.keras` files,
mixed precision and sequence lengths of every layer: tests/test_layers.py."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from bert_tf import BertEncoder, BertPretrainer
from bert_tf.modeling import TransformerBlock, attention_mask_adder, gelu, gelu_tanh
from bert_tf.modeling.embeddings import sinusoidal_position_table
from bert_tf.modeling.losses import masked_lm_loss

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

TF1_NAMES_PER_LAYER = [
    "attention/self/query/kernel", "attention/self/query/bias", "attention/self/key/kernel",
    "attention/self/key/bias", "attention/self/value/kernel", "attention/self/value/bias",
    "attention/output/dense/kernel", "attention/output/dense/bias", "attention/output/LayerNorm/gamma",
    "attention/output/LayerNorm/beta", "intermediate/dense/kernel", "intermediate/dense/bias",
    "output/dense/kernel", "output/dense/bias", "output/LayerNorm/gamma", "output/LayerNorm/beta"]


def features(config, batch=2, length=8, predictions=3, seed=0, pad=2):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, config.vocab_size, (batch, length)).astype("int32")
    mask = np.ones((batch, length), "int32")
    mask[0, length - pad:] = 0
    ids[0, length - pad:] = 0
    return {"input_word_ids": ids, "input_mask": mask,
            "input_type_ids": (np.arange(length)[None, :] >= length // 2).astype("int32").repeat(batch, 0),
            "masked_lm_positions": rng.integers(1, length - pad, (batch, predictions)).astype("int32"),
            "masked_lm_ids": rng.integers(0, config.vocab_size, (batch, predictions)).astype("int32"),
            "masked_lm_weights": np.array([[1, 1, 0]] * batch, "float32")[:, :predictions],
            "next_sentence_labels": np.array([[0], [1]] * (batch // 2), "int32")}


def test_variables_are_named_and_shaped_as_in_the_tf1_checkpoints(tiny_config):
    c = tiny_config
    model = BertPretrainer(c)
    got = {v.path: tuple(v.shape) for v in model.weights}
    h, v, i = c.hidden_size, c.vocab_size, c.intermediate_size
    expected = {"bert/embeddings/word_embeddings": (v, h), "bert/embeddings/token_type_embeddings": (2, h),
                "bert/embeddings/position_embeddings": (c.max_position_embeddings, h),
                "bert/embeddings/LayerNorm/gamma": (h,), "bert/embeddings/LayerNorm/beta": (h,),
                "bert/pooler/dense/kernel": (h, h), "bert/pooler/dense/bias": (h,),
                "cls/predictions/transform/dense/kernel": (h, h), "cls/predictions/transform/dense/bias": (h,),
                "cls/predictions/transform/LayerNorm/gamma": (h,), "cls/predictions/transform/LayerNorm/beta": (h,),
                "cls/predictions/output_bias": (v,), "cls/seq_relationship/output_weights": (2, h),
                "cls/seq_relationship/output_bias": (2,)}
    for layer in range(c.num_hidden_layers):
        for name in TF1_NAMES_PER_LAYER:
            shape = {"intermediate/dense/kernel": (h, i), "intermediate/dense/bias": (i,),
                     "output/dense/kernel": (i, h)}.get(name)
            if shape is None:
                shape = (h, h) if name.endswith("kernel") else (h,)
            expected[f"bert/encoder/layer_{layer}/{name}"] = shape
    assert got == expected


def test_gelu_variants_follow_their_formulas():
    x = np.linspace(-4, 4, 81).astype("float32")
    exact = np.array([0.5 * t * (1 + math.erf(t / math.sqrt(2))) for t in x])
    approx = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(ops.convert_to_numpy(gelu(x)), exact, atol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(gelu_tanh(x)), approx, atol=1e-6)
    # The two differ by up to ~2e-4 in float32: a test at 1e-5 tells them apart.
    assert np.abs(exact - approx).max() > 1e-4


def test_masked_lm_head_is_tied_to_the_word_embeddings_and_only_at_positions(tiny_config):
    model = BertPretrainer(tiny_config.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    f = features(tiny_config)
    table_vars = [v for v in model.weights if tuple(v.shape) == (tiny_config.vocab_size, tiny_config.hidden_size)]
    assert [v.path for v in table_vars] == ["bert/embeddings/word_embeddings"]
    out = model(f)
    assert tuple(out["mlm_logits"].shape) == (2, 3, tiny_config.vocab_size)
    seq = ops.convert_to_numpy(model.encoder(f)["sequence_output"])
    gathered = seq[np.arange(2)[:, None], f["masked_lm_positions"]]
    head = model.masked_lm
    x = ops.convert_to_numpy(head.layer_norm(head.dense(gathered)))
    table = model.encoder.word_embeddings.numpy()
    expected = x @ table.T + head.output_bias.numpy()
    np.testing.assert_allclose(ops.convert_to_numpy(out["mlm_logits"]), expected, atol=1e-5)
    # Changing the embedding table changes the output layer: the weights are shared, not copied.
    model.encoder.word_embeddings.assign(table * 2.0)
    assert np.abs(ops.convert_to_numpy(model(f)["mlm_logits"]) - expected).max() > 1e-3


def test_masked_lm_loss_divides_by_weight_sum_plus_1e_5():
    logits = np.log(np.array([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]], "float32"))
    ids = np.array([[0, 1]])
    loss = float(masked_lm_loss(logits, ids, np.array([[1.0, 1.0]], "float32")))
    assert loss == pytest.approx((-math.log(0.5) - math.log(0.8)) / (2 + 1e-5), rel=1e-6)
    # A batch whose predictions are all padding gives 0, not NaN.
    assert float(masked_lm_loss(logits, ids, np.zeros((1, 2), "float32"))) == 0.0
    # One weighted prediction: the 1e-5 is visible at this precision.
    one = float(masked_lm_loss(logits, ids, np.array([[1.0, 0.0]], "float32")))
    assert one == pytest.approx(-math.log(0.5) / (1 + 1e-5), rel=1e-7)
    assert one != pytest.approx(-math.log(0.5), rel=1e-7)


def test_losses_and_metrics_of_a_batch(tiny_config):
    model = BertPretrainer(tiny_config)
    f = features(tiny_config)
    losses = {k: float(v) for k, v in model.compute_losses(model(f, training=False), f).items()}
    assert losses["loss"] == pytest.approx(losses["masked_lm_loss"] + losses["next_sentence_loss"], rel=1e-6)
    # A fresh model predicts near uniformly: MLM loss ~ log V, NSP loss ~ log 2.
    assert abs(losses["masked_lm_loss"] - math.log(tiny_config.vocab_size)) < 0.5
    assert abs(losses["next_sentence_loss"] - math.log(2)) < 0.2
    no_nsp = BertPretrainer(tiny_config, use_next_sentence=False)
    assert set(no_nsp.compute_losses(no_nsp(f), f)) == {"loss", "masked_lm_loss", "masked_lm_accuracy"}


def test_pretrainer_serializes_its_own_arguments_with_the_config(tiny_config):
    model = BertPretrainer(tiny_config, use_next_sentence=False, dtype="mixed_bfloat16")
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(model))
    assert type(again) is BertPretrainer and again.config == tiny_config
    assert again.use_next_sentence is False and again.dtype_policy.name == "mixed_bfloat16"


def test_padding_does_not_change_real_positions(tiny_config):
    encoder = BertEncoder(tiny_config)
    f = features(tiny_config)
    other = dict(f, input_word_ids=f["input_word_ids"].copy())
    other["input_word_ids"][0, -2:] = 7  # different ids under the padding mask
    a = ops.convert_to_numpy(encoder(f)["sequence_output"])[0, :-2]
    b = ops.convert_to_numpy(encoder(other)["sequence_output"])[0, :-2]
    np.testing.assert_allclose(a, b, atol=1e-6)
    adder = ops.convert_to_numpy(attention_mask_adder(f["input_mask"]))
    assert adder.shape == (2, 1, 1, 8) and adder[0, 0, 0, -1] == -10000.0 and adder[0, 0, 0, 0] == 0.0


def test_encoder_outputs_shapes_and_variable_sequence_length(tiny_config):
    encoder = BertEncoder(tiny_config)
    for length in (5, 17):
        out = encoder(features(tiny_config, length=length))
        assert tuple(out["sequence_output"].shape) == (2, length, 16)
        assert tuple(out["pooled_output"].shape) == (2, 16)
        assert len(out["encoder_outputs"]) == 2
        np.testing.assert_array_equal(ops.convert_to_numpy(out["encoder_outputs"][-1]),
                                      ops.convert_to_numpy(out["sequence_output"]))


def test_sequence_longer_than_positions_is_a_clear_error(tiny_config):
    with pytest.raises(ValueError, match="Sequence length 40 exceeds max_position_embeddings=32"):
        BertEncoder(tiny_config)(features(tiny_config, length=40))
    with pytest.raises(KeyError, match=r"Missing input\(s\) \['input_mask'\]"):
        BertEncoder(tiny_config)({"input_word_ids": np.ones((1, 4), "int32"),
                                  "input_type_ids": np.zeros((1, 4), "int32")})


def test_dropout_only_in_training(tiny_config):
    encoder = BertEncoder(tiny_config)
    f = features(tiny_config)
    a, b = (ops.convert_to_numpy(encoder(f, training=True)["sequence_output"]) for _ in range(2))
    c, d = (ops.convert_to_numpy(encoder(f, training=False)["sequence_output"]) for _ in range(2))
    assert np.abs(a - b).max() > 1e-3
    np.testing.assert_array_equal(c, d)


def test_initializers_are_truncated_normal_002_and_zero_bias(tiny_config):
    keras.utils.set_random_seed(0)
    model = BertPretrainer(tiny_config.replace(vocab_size=2000, hidden_size=64, intermediate_size=128))
    table = model.encoder.word_embeddings.numpy()
    # Truncated at 2 stddev: std shrinks to 0.88 * 0.02, nothing beyond 0.04.
    assert abs(table.std() - 0.0176) < 0.001 and np.abs(table).max() <= 0.04
    matrices = 0
    for v in model.weights:
        if v.path.endswith("bias") or v.path.endswith("beta"):
            assert not v.numpy().any(), v.path
        elif v.path.endswith("gamma"):
            assert (v.numpy() == 1).all(), v.path
        elif "seed_generator" not in v.path:
            # Every kernel and embedding table (pooler, NSP and MLM transform included), not only the word table.
            values = v.numpy()
            # Four standard errors of a sample std (NSP's 2 x 64 matrix is small); a 0.01 or Glorot init is far out.
            tolerance = 4 * 0.0176 / math.sqrt(2 * values.size)
            assert abs(values.std() - 0.0176) < tolerance and np.abs(values).max() <= 0.04, (v.path, values.std())
            matrices += 1
    assert matrices == 3 + 6 * tiny_config.num_hidden_layers + 3  # embeddings, blocks, pooler/transform/NSP


def test_layer_norm_epsilon_is_1e_12_everywhere(tiny_config):
    model = BertPretrainer(tiny_config)
    norms = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.LayerNormalization)]
    assert len(norms) == 1 + 2 * tiny_config.num_hidden_layers + 1
    assert {n.epsilon for n in norms} == {1e-12}


@pytest.mark.parametrize("pre_layer_norm", [False, True])
def test_block_composes_its_sublayers_post_ln_or_pre_ln(pre_layer_norm):
    block = TransformerBlock(8, 2, 32, dropout_rate=0.0, attention_dropout_rate=0.0, pre_layer_norm=pre_layer_norm)
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    adder = attention_mask_adder(np.ones((2, 5)))
    out = ops.convert_to_numpy(block(x, adder))
    attn, attn_out = block.self_attention, block.attention_output
    ffn_in, ffn_out = block.intermediate, block.output_dense
    ln1, ln2, act = block.attention_layer_norm, block.output_layer_norm, gelu_tanh
    if pre_layer_norm:  # x + Sublayer(LN(x))
        h = x + attn_out(attn(ln1(x), adder))
        expected = h + ffn_out(act(ffn_in(ln2(h))))
    else:  # LN(x + Sublayer(x)), the original
        h = ln1(x + attn_out(attn(x, adder)))
        expected = ln2(h + ffn_out(act(ffn_in(h))))
    np.testing.assert_allclose(out, ops.convert_to_numpy(expected), atol=1e-5)


def test_pre_layer_norm_and_sinusoidal_options(tiny_config):
    f = features(tiny_config)
    pre = BertEncoder(tiny_config.replace(pre_layer_norm=True))
    assert "bert/encoder/LayerNorm/gamma" in {v.path for v in pre.weights}
    sinusoidal = BertEncoder(tiny_config.replace(position_embedding_type="sinusoidal"))
    assert "bert/embeddings/position_embeddings" not in {v.path for v in sinusoidal.weights}
    assert tuple(sinusoidal(f)["sequence_output"].shape) == (2, 8, 16)
    table = ops.convert_to_numpy(sinusoidal_position_table(32, 16))
    np.testing.assert_allclose(table[3, 0:2], [math.sin(3.0), math.cos(3.0)], atol=1e-6)
    np.testing.assert_allclose(table[3, 2:4], [math.sin(3 / 10000 ** (2 / 16)), math.cos(3 / 10000 ** (2 / 16))],
                               atol=1e-6)


def test_mixed_bfloat16_keeps_layer_norm_and_softmax_in_float32(tiny_config):
    f = features(tiny_config)
    keras.utils.set_random_seed(3)
    full = BertPretrainer(tiny_config)
    try:
        keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
        keras.utils.set_random_seed(3)
        mixed = BertPretrainer(tiny_config)
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    assert all(v.dtype == "float32" for v in mixed.weights)
    norms = [layer for layer in mixed._flatten_layers() if isinstance(layer, keras.layers.LayerNormalization)]
    assert {n.compute_dtype for n in norms} == {"float32"}
    out = mixed(f, training=False)
    assert out["mlm_logits"].dtype == "bfloat16"
    ref = full(f, training=False)
    np.testing.assert_allclose(ops.convert_to_numpy(ops.cast(out["mlm_logits"], "float32")),
                               ops.convert_to_numpy(ref["mlm_logits"]), atol=0.1)
    assert np.isfinite(float(mixed.compute_losses(out, f)["loss"]))
    # The attention softmax runs in float32 although the scores come from bfloat16 matmuls.
    graph = tf.function(lambda x: mixed(x, training=True)).get_concrete_function(
        {k: tf.TensorSpec(v.shape, v.dtype) for k, v in f.items()}).graph
    softmax_dtypes = [op.get_attr("T") for op in graph.get_operations() if op.type == "Softmax"]
    assert softmax_dtypes == [tf.float32] * tiny_config.num_hidden_layers


def test_dtype_argument_reaches_every_sublayer(tiny_config):
    """`BertPretrainer(config, dtype="mixed_bfloat16")` (no global policy): every layer computes in bfloat16 but the
    LayerNorms; Keras 3 does not pass a layer's dtype to the layers it creates, so the model must."""
    model = BertPretrainer(tiny_config, dtype="mixed_bfloat16")
    layers = list(model._flatten_layers())
    assert {layer.compute_dtype for layer in layers if isinstance(layer, keras.layers.LayerNormalization)} == {
        "float32"}
    others = [layer for layer in layers if not isinstance(layer, keras.layers.LayerNormalization)]
    assert len([layer for layer in others if isinstance(layer, keras.layers.Dense)]) == 6 * 2 + 2
    assert {layer.compute_dtype for layer in others} == {"bfloat16"}
    assert {v.dtype for v in model.weights} == {"float32"}
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(model))
    assert {layer.compute_dtype for layer in restored._flatten_layers()
            if isinstance(layer, keras.layers.Dense)} == {"bfloat16"}

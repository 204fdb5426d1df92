"""The faster formulations in bert_tf.modeling compute the original math: fused sparse cross-entropy, the
first-index argmax of the accuracy, and fused attention when no dropout applies (bench/ measures their gain)."""

import math

import keras
import numpy as np
import pytest
from keras import ops

from bert_tf.modeling import BertSelfAttention, attention_mask_adder
from bert_tf.modeling.losses import (
    first_argmax,
    masked_lm_accuracy,
    masked_lm_loss,
    next_sentence_accuracy,
    next_sentence_loss,
)

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def log_softmax(x):
    x = x.astype(np.float64)
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_masked_lm_loss_equals_the_one_hot_log_softmax_of_the_original():
    rng = np.random.default_rng(0)
    logits = (rng.normal(size=(3, 4, 50)) * 4).astype("float32")
    ids = rng.integers(0, 50, (3, 4))
    weights = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]], "float32")
    one_hot = np.eye(50)[ids]
    expected = (weights * -(log_softmax(logits) * one_hot).sum(-1)).sum() / (weights.sum() + 1e-5)
    assert float(masked_lm_loss(logits, ids, weights)) == pytest.approx(expected, rel=1e-6)
    nsp_logits, labels = logits[:, 0, :2], np.array([[0], [1], [1]])
    expected_nsp = -log_softmax(nsp_logits)[np.arange(3), labels[:, 0]].mean()
    assert float(next_sentence_loss(nsp_logits, labels)) == pytest.approx(expected_nsp, rel=1e-6)


def test_masked_lm_loss_rejects_a_label_outside_the_vocab():
    with pytest.raises(Exception, match="label"):
        float(masked_lm_loss(np.zeros((1, 2, 5), "float32"), np.array([[1, 5]]), np.ones((1, 2), "float32")))


def test_first_argmax_is_tf_argmax_first_index_on_ties():
    x = np.array([[0.5, 2.0, 2.0, 1.0],        # tie: the first
                  [-0.0, 0.0, -1.0, -2.0],      # -0.0 == +0.0: the first, as tf.argmax (keras' argmax picks 1)
                  [-3.0, -2.0, -1.0, -1.5],
                  [7.0, 7.0, 7.0, 7.0]], "float32")
    assert ops.convert_to_numpy(first_argmax(x)).tolist() == [1, 0, 2, 0]
    big = np.random.default_rng(1).normal(size=(4, 5, 1000)).astype("float32")
    np.testing.assert_array_equal(ops.convert_to_numpy(first_argmax(big)), big.argmax(-1))


def test_accuracies_count_weighted_argmax_hits():
    logits = np.array([[[0.0, 3.0, 1.0], [2.0, 2.0, 0.0], [0.0, 0.0, 5.0]]], "float32")
    # Hits at positions 0 and 1 (the tie goes to index 0); position 2 misses but has weight 0.
    accuracy = masked_lm_accuracy(logits, np.array([[1, 0, 1]]), np.array([[1.0, 1.0, 0.0]], "float32"))
    assert float(accuracy) == pytest.approx(1.0)
    accuracy = masked_lm_accuracy(logits, np.array([[1, 1, 2]]), np.array([[1.0, 1.0, 1.0]], "float32"))
    assert float(accuracy) == pytest.approx(2 / 3)
    assert float(next_sentence_accuracy(logits[0, :, :2], np.array([[1], [0], [1]]))) == pytest.approx(2 / 3)


def reference_attention(layer, x, input_mask):
    """NumPy of the original attention_layer: softmax(q k^T / sqrt(d) - 10000 * pad) v, heads concatenated."""
    def project(dense):
        return x @ dense.kernel.numpy() + dense.bias.numpy()

    batch, length, _ = x.shape
    heads, d = layer.num_attention_heads, layer.head_size
    q, k, v = (project(dense).reshape(batch, length, heads, d).transpose(0, 2, 1, 3)
               for dense in (layer.query, layer.key, layer.value))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + (1.0 - input_mask)[:, None, None, :] * -10000.0
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, heads * d)


def test_fused_and_explicit_attention_equal_the_original_math():
    keras.utils.set_random_seed(0)
    layer = BertSelfAttention(hidden_size=16, num_attention_heads=4, attention_dropout_rate=0.1)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 7, 16)).astype("float32")
    input_mask = np.ones((3, 7), "float32")
    input_mask[0, 4:] = 0
    input_mask[2, :] = 0  # an all-padding row: uniform attention in the original, not NaN
    adder = attention_mask_adder(input_mask)
    inference = ops.convert_to_numpy(layer(x, adder, training=False))
    expected = reference_attention(layer, x, input_mask)
    np.testing.assert_allclose(inference, expected, atol=1e-5)
    heads = (3, 7, 4, 4)
    q, k, v = (ops.reshape(dense(x), heads) for dense in (layer.query, layer.key, layer.value))
    for path in (layer.fused_attention(q, k, v, adder), layer.attention_with_dropout(q, k, v, adder)):
        np.testing.assert_allclose(ops.convert_to_numpy(ops.reshape(path, (3, 7, 16))), expected, atol=1e-5)
    # Training applies dropout to the probabilities: outputs differ from inference, and between calls.
    trained = [ops.convert_to_numpy(layer(x, adder, training=True)) for _ in range(2)]
    assert np.abs(trained[0] - expected).max() > 1e-3 and np.abs(trained[0] - trained[1]).max() > 1e-3

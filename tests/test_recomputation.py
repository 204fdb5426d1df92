"""Under a 16-bit compute dtype the layers keep less for the backward pass and recompute the rest there, with the
same results: the attention keeps only its bfloat16 scores (outputs and gradients stay those of the float32-softmax
attention under the same dropout seed; one seed per call, as plain dropout, so runs resume exactly), GELU keeps its
input only, dropout regenerates its mask from the seed. float32 training keeps the original ops bit for bit. Packed
rows attend within their instance through a block-diagonal bias.
"""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from bert_tf.modeling import BertSelfAttention, attention_mask_adder, gelu, gelu_tanh
from bert_tf.modeling.dropout import BertDropout, dropout_stream

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

HIDDEN, HEADS, LENGTH = 32, 4, 9


def attention_layer(dtype, rate=0.1):
    keras.utils.set_random_seed(0)
    layer = BertSelfAttention(HIDDEN, HEADS, attention_dropout_rate=rate, dtype=dtype)
    layer.build((None, None, HIDDEN))
    return layer


def inputs():
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(2, LENGTH, HIDDEN)), tf.float32)
    input_mask = np.ones((2, LENGTH), "float32")
    input_mask[0, 6:] = 0
    upstream = tf.constant(rng.normal(size=(2, LENGTH, HIDDEN)), tf.float32)
    return x, attention_mask_adder(input_mask), upstream


def with_heads(layer, attend):
    """A forward(x, bias) that projects x to the layer's q, k, v and runs attend(q, k, v, bias) on them."""
    def forward(x, bias):
        heads = (2, LENGTH, HEADS, HIDDEN // HEADS)
        q, k, v = (ops.reshape(ops.cast(dense(x), layer.compute_dtype), heads)
                   for dense in (layer.query, layer.key, layer.value))
        return ops.reshape(attend(q, k, v, bias), (2, LENGTH, HIDDEN))
    return forward


def output_and_gradients(layer, forward):
    """forward(x, bias) -> [B, T, H], its output and the gradients of <output, upstream> with respect to x and the
    layer's weights, in one XLA program, as training computes them; the dropout's state is restored afterwards."""
    x, bias, upstream = inputs()
    state = layer.dropout.seed_generator.state
    before = state.numpy()

    @tf.function(jit_compile=True)
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = tf.cast(forward(x, bias), tf.float32)
            loss = tf.reduce_sum(out * upstream)
        return [out] + tape.gradient(loss, [x] + [w.value for w in layer.trainable_variables])

    results = [t.numpy() for t in run(x)]
    state.assign(before)
    return results


def test_bfloat16_training_matches_the_float32_softmax_attention_under_the_same_seed():
    layer = attention_layer("mixed_bfloat16")
    recomputed = output_and_gradients(layer, lambda x, bias: layer(x, bias, training=True))
    explicit = output_and_gradients(layer, with_heads(
        layer, lambda q, k, v, bias: layer.attention_with_dropout(q, k, v, bias, training=True)))
    without_dropout = output_and_gradients(layer, with_heads(
        layer, lambda q, k, v, bias: layer.attention_with_dropout(q, k, v, bias, training=False)))
    names = ["output", "x"] + [w.path.split("/", 1)[1] for w in layer.trainable_variables]
    for name, new, old, undropped in zip(names, recomputed, explicit, without_dropout):
        if name == "key/bias":  # adds the same q.b to a query's every score: the softmax's gradient is 0 up to noise
            assert np.abs(new).max() < 1e-2 * np.abs(recomputed[1]).max()
            continue
        scale = np.abs(old).max()
        np.testing.assert_allclose(new, old, atol=1e-2 * scale, err_msg=name)  # bfloat16: 8 bits of mantissa
        assert np.abs(old - undropped).max() > 0.05 * scale, name  # the dropout applied, the same mask in both


def test_float32_training_keeps_the_original_ops_bit_for_bit():
    layer = attention_layer("float32")
    scale = 1.0 / math.sqrt(HIDDEN // HEADS)

    def original(q, k, v, bias):
        q, k, v = (tf.transpose(t, (0, 2, 1, 3)) for t in (q, k, v))
        probs = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * scale + bias)
        return tf.transpose(tf.matmul(layer.dropout(probs, training=True), v), (0, 2, 1, 3))

    ours = output_and_gradients(layer, lambda x, bias: layer(x, bias, training=True))
    for new, old in zip(ours, output_and_gradients(layer, with_heads(layer, original))):
        # The same ops and the same dropout mask: bit-identical on most CPUs, but on some (AMD EPYC, 2026-11-27)
        # the CPU kernels round a few elements 1 ulp apart (max 3.7e-9); a changed op is orders of magnitude more.
        np.testing.assert_allclose(new, old, rtol=1e-6, atol=1e-8)


def test_the_recomputed_dropout_draws_one_seed_per_call_and_replays_from_the_state():
    layer = attention_layer("mixed_bfloat16")
    x, bias, _ = inputs()
    state = layer.dropout.seed_generator.state
    start = state.numpy()
    first = ops.convert_to_numpy(layer(x, bias, training=True))
    np.testing.assert_array_equal(state.numpy(), start + [0, 1])  # one draw per call, as Keras' dropout
    second = ops.convert_to_numpy(layer(x, bias, training=True))
    assert np.abs(first - second).max() > 1e-3
    state.assign(start)  # a resumed run restores the state: the same masks follow
    np.testing.assert_array_equal(ops.convert_to_numpy(layer(x, bias, training=True)), first)
    state.assign(start)
    with dropout_stream(1, 2):  # another replica's stream draws another mask
        assert np.abs(ops.convert_to_numpy(layer(x, bias, training=True)) - first).max() > 1e-3


def test_packed_rows_attend_only_within_their_instance():
    layer = attention_layer("float32")
    rng = np.random.default_rng(3)
    first, second = rng.normal(size=(1, 5, HIDDEN)), rng.normal(size=(1, 3, HIDDEN))
    packed = np.concatenate([first, second, np.zeros((1, 2, HIDDEN))], axis=1).astype("float32")
    bias = attention_mask_adder(np.array([[1] * 8 + [0] * 2]), instance_ids=np.array([[0] * 5 + [1] * 3 + [2] * 2]))
    assert tuple(bias.shape) == (1, 1, 10, 10)
    out = ops.convert_to_numpy(layer(packed, bias))
    for rows, alone in ((slice(0, 5), first), (slice(5, 8), second)):
        separate = layer(alone.astype("float32"), attention_mask_adder(np.ones(alone.shape[:2])))
        np.testing.assert_allclose(out[:, rows], ops.convert_to_numpy(separate), atol=1e-5)


def gradient(function, x):
    """function(x) and d sum(function(x) * weights) / dx in one XLA program, in float32."""
    weights = tf.range(x.shape[-1], dtype=tf.float32) / x.shape[-1] - 0.5

    @tf.function(jit_compile=True)
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = function(x)
            loss = tf.reduce_sum(tf.cast(y, tf.float32) * weights)
        return tf.cast(y, tf.float32), tf.cast(tape.gradient(loss, x), tf.float32)

    return [t.numpy() for t in run(x)]


def test_gelu_under_16_bits_keeps_its_input_only_with_the_same_values_and_gradients():
    x = tf.constant(np.random.default_rng(0).normal(size=(4, 256)) * 3, tf.bfloat16)
    for recomputed, formula in ((gelu, lambda x: 0.5 * x * (1.0 + tf.math.erf(x / math.sqrt(2.0)))),
                                (gelu_tanh, lambda x: 0.5 * x * (1.0 + tf.tanh(
                                    math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3)))))):
        (value, slope), (expected_value, expected_slope) = gradient(recomputed, x), gradient(formula, x)
        np.testing.assert_array_equal(value, expected_value)  # the forward pass runs the same ops
        # The derivative is computed in float32 from the bfloat16 input: within bfloat16's rounding of autodiff's.
        np.testing.assert_allclose(slope, expected_slope, atol=0.02 * np.abs(expected_slope).max())
        x32 = tf.cast(x, tf.float32)
        np.testing.assert_array_equal(gradient(recomputed, x32)[1], gradient(formula, x32)[1])  # float32: autodiff


def test_dropout_under_16_bits_regenerates_its_mask_for_the_backward_pass():
    layer = BertDropout(0.1, dtype="mixed_bfloat16")
    x = tf.constant(np.random.default_rng(0).normal(size=(4, 256)), tf.bfloat16)
    results = []
    for apply in (layer.dropout_regenerating_mask, layer.dropout_with_seed):
        layer.seed_generator.state.assign([1234, 0])
        results.append(gradient(lambda x: apply(x, layer.next_seed()), x))
    (value, slope), (expected_value, expected_slope) = results
    np.testing.assert_array_equal(value, expected_value)
    # The same elements dropped; the kept ones scaled in bfloat16 (XLA may skip a rounding in one program).
    np.testing.assert_array_equal(slope == 0, expected_slope == 0)
    np.testing.assert_allclose(slope, expected_slope, atol=2 ** -8)
    assert 0.05 < np.mean(slope == 0) < 0.15  # about 10% dropped
    layer.seed_generator.state.assign([1234, 0])
    np.testing.assert_array_equal(gradient(lambda x: layer(x, training=True), x)[1], slope)  # the layer's path

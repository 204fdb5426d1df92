"""`BertSelfAttention`: the original `attention_layer`, scaled dot product with an additive padding mask."""

import math

import keras
from keras import ops

from bert_tf.modeling.dropout import BertDropout

# The original adds -10000 (not -inf) to the logits of padded keys: kept so logits match it exactly.
MASK_ADDER = -10000.0


def attention_mask_adder(input_mask, instance_ids=None, dtype="float32"):
    """The additive attention bias: 0 where a query may attend to a key, -10000 where it may not.

    Plain rows ([B, T] `input_mask`, 1 real / 0 pad): [B, 1, 1, T], every query sees the real keys of its row.
    Packed rows (several instances per row, `instance_ids` [B, T] naming each token's instance): [B, 1, T, T],
    block-diagonal, a query sees the real keys of its own instance only. The attention takes either shape.

    Example:
    >>> tuple(attention_mask_adder(ops.ones((2, 5))).shape)
    (2, 1, 1, 5)
    >>> bias = attention_mask_adder(ops.ones((1, 4)), instance_ids=ops.convert_to_tensor([[0, 0, 1, 1]]))
    >>> (ops.convert_to_numpy(bias)[0, 0] + 0.0).tolist()[0]  # + 0.0: -0.0 reads as 0.0
    [0.0, 0.0, -10000.0, -10000.0]
    """
    mask = ops.cast(input_mask, dtype)
    if instance_ids is None:
        return (1.0 - mask)[:, None, None, :] * MASK_ADDER
    same_instance = ops.cast(ops.equal(instance_ids[:, :, None], instance_ids[:, None, :]), dtype)
    return (1.0 - same_instance * mask[:, None, :])[:, None, :, :] * MASK_ADDER


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSelfAttention(keras.layers.Layer):
    """Multi-head self-attention with the original's variables: `query`, `key`, `value` dense layers with
    [H, H] kernels (the TF1 shapes, so conversion copies them as they are).

    When no dropout applies to the attention probabilities (inference, or `attention_dropout_rate=0`), the same
    math runs through `keras.ops.dot_product_attention` (`fused_attention`: cuDNN flash attention under JAX on a
    GPU); in training with dropout, through explicit scores, softmax and dropout (`attention_with_dropout`), as
    the original. Keras' TensorFlow backend has no fused kernel (its dot_product_attention is the same einsums),
    so under TensorFlow the explicit path always runs and exported graphs keep their plain ops.

    Args:
        hidden_size: H.
        num_attention_heads: A; must divide H.
        attention_dropout_rate: dropout on the attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Example:
    >>> attention = BertSelfAttention(hidden_size=8, num_attention_heads=2)
    >>> x = ops.ones((2, 5, 8))
    >>> tuple(attention(x, attention_mask_adder(ops.ones((2, 5)))).shape)
    (2, 5, 8)
    """

    def __init__(self, hidden_size, num_attention_heads, attention_dropout_rate=0.1, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(f"hidden_size={hidden_size} is not divisible by num_attention_heads="
                             f"{num_attention_heads}.")
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.head_size = hidden_size // num_attention_heads
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.query = keras.layers.Dense(hidden_size, kernel_initializer=init, dtype=self.dtype_policy, name="query")
        self.key = keras.layers.Dense(hidden_size, kernel_initializer=init, dtype=self.dtype_policy, name="key")
        self.value = keras.layers.Dense(hidden_size, kernel_initializer=init, dtype=self.dtype_policy, name="value")
        self.dropout = BertDropout(attention_dropout_rate, dtype=self.dtype_policy)

    def build(self, input_shape):
        for dense in (self.query, self.key, self.value):
            dense.build(input_shape)

    def call(self, x, mask_adder, training=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        heads = (batch, length, self.num_attention_heads, self.head_size)
        q, k, v = (ops.reshape(dense(x), heads) for dense in (self.query, self.key, self.value))  # [B, T, A, d]
        if (training and self.attention_dropout_rate > 0) or keras.backend.backend() == "tensorflow":
            context = self.attention_with_dropout(q, k, v, mask_adder, training)
        else:
            context = self.fused_attention(q, k, v, mask_adder)
        return ops.reshape(context, (batch, length, self.hidden_size))

    def fused_attention(self, q, k, v, mask_adder):
        """`attention_with_dropout` without dropout, through `keras.ops.dot_product_attention`: one fused kernel
        where the backend has one (cuDNN flash attention under JAX on a GPU), in the [B, T, A, d] layout."""
        return ops.dot_product_attention(q, k, v, bias=mask_adder, scale=1.0 / math.sqrt(self.head_size))

    def attention_with_dropout(self, q, k, v, mask_adder, training=None):
        """softmax(q k^T / sqrt(d) + mask_adder) v with dropout on the probabilities, as the original;
        q, k, v and the result are [B, T, A, d]."""
        q, k, v = (ops.transpose(t, (0, 2, 1, 3)) for t in (q, k, v))  # [B, A, T, d]
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(self.head_size))
        # Softmax in float32 under mixed precision.
        scores = ops.cast(scores, "float32") + ops.cast(mask_adder, "float32")
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.dropout(probs, training=training)
        return ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3))

    def compute_output_shape(self, input_shape, mask_shape=None):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                      attention_dropout_rate=self.attention_dropout_rate,
                      initializer_range=self.initializer_range)
        return config

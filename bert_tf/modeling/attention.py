"""`BertSelfAttention`: the original `attention_layer`, scaled dot product with an additive padding mask."""

import math

import keras
from keras import ops

# The original adds -10000 (not -inf) to the logits of padded keys: kept so logits match it exactly.
MASK_ADDER = -10000.0


def attention_mask_adder(input_mask, dtype="float32"):
    """[B, T] mask of 1 (real) / 0 (pad) -> [B, 1, 1, T] additive bias: 0 for real keys, -10000 for pads."""
    mask = ops.cast(input_mask, dtype)
    return (1.0 - mask)[:, None, None, :] * MASK_ADDER


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSelfAttention(keras.layers.Layer):
    """Multi-head self-attention with the original's variables: `query`, `key`, `value` dense layers with
    [H, H] kernels (the TF1 shapes, so conversion copies them as they are).

    Args:
        hidden_size: H.
        num_attention_heads: A; must divide H.
        attention_dropout_rate: dropout on the attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Example:
    >>> attention = BertSelfAttention(hidden_size=8, num_attention_heads=2)
    >>> x = ops.ones((2, 5, 8))
    >>> attention(x, attention_mask_adder(ops.ones((2, 5)))).shape
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
        self.query = keras.layers.Dense(hidden_size, kernel_initializer=init, name="query")
        self.key = keras.layers.Dense(hidden_size, kernel_initializer=init, name="key")
        self.value = keras.layers.Dense(hidden_size, kernel_initializer=init, name="value")
        self.dropout = keras.layers.Dropout(attention_dropout_rate)

    def build(self, input_shape):
        for dense in (self.query, self.key, self.value):
            dense.build(input_shape)

    def _split_heads(self, x, batch, length):
        x = ops.reshape(x, (batch, length, self.num_attention_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))  # [B, A, T, d]

    def call(self, x, mask_adder, training=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        q = self._split_heads(self.query(x), batch, length)
        k = self._split_heads(self.key(x), batch, length)
        v = self._split_heads(self.value(x), batch, length)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(self.head_size))
        # Softmax in float32 under mixed precision.
        scores = ops.cast(scores, "float32") + ops.cast(mask_adder, "float32")
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.dropout(probs, training=training)
        context = ops.matmul(probs, v)  # [B, A, T, d]
        context = ops.transpose(context, (0, 2, 1, 3))
        return ops.reshape(context, (batch, length, self.hidden_size))

    def compute_output_shape(self, input_shape, mask_shape=None):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                      attention_dropout_rate=self.attention_dropout_rate,
                      initializer_range=self.initializer_range)
        return config

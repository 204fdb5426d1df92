"""`BertSelfAttention`: the original `attention_layer`, scaled dot product with an additive padding mask."""

import math

import keras
from keras import ops

from bert_tf.modeling.attention_kernel import active_attention_kernel
from bert_tf.modeling.dropout import BertDropout
from bert_tf.modeling.recomputation import recomputes, tied_to_backward

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


def sequence_lengths(attention_bias):
    """Each row's real tokens (int32 [B]) from a plain rows' bias ([B, 1, 1, T], 0 where a key is real): BERT's rows
    hold their tokens first and padding after, so the count is the length.

    Example:
    >>> ops.convert_to_numpy(sequence_lengths(attention_mask_adder(ops.convert_to_tensor([[1, 1, 0], [1, 1, 1]]))))
    array([2, 3], dtype=int32)
    """
    return ops.sum(ops.cast(attention_bias[:, 0, 0, :] > MASK_ADDER / 2, "int32"), axis=-1)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSelfAttention(keras.layers.Layer):
    """Multi-head self-attention with the original's variables: `query`, `key`, `value` dense layers with
    [H, H] kernels (the TF1 shapes, so conversion copies them as they are).

    Three executions of the same math, chosen per call:
    - `fused_attention`: when no dropout applies to the attention probabilities (inference, or
      `attention_dropout_rate=0`) under a backend with a fused kernel, `keras.ops.dot_product_attention` (cuDNN
      flash attention under JAX on a GPU). Keras' TensorFlow backend has none (its dot_product_attention is the
      same einsums), so under TensorFlow inference takes the explicit path and exported graphs keep plain ops.
    - `recomputed_attention`: training under a 16-bit compute dtype (mixed_bfloat16, mixed_float16). Same forward
      ops as the explicit path; the backward pass recomputes the softmax, the dropout (its mask regenerated from
      the seed drawn for the call) and the dropped probabilities from the stored 16-bit scores, so a step keeps
      2 bytes per [batch, heads, T, T] element instead of the float32 probabilities, the dropout mask and the
      dropped probabilities. No matrix multiplication is computed twice.
    - `attention_with_dropout`: everything else, float32 training included (the original's ops, autodiff as is).

    Inside `attention_kernel.fused_attention_kernel(kernel)` (a run's setting, e.g. cuDNN flash attention on GPUs),
    plain rows take `kernel` wherever it applies, with no attention-probability dropout (a call that would drop
    probabilities raises); packed rows and calls where it does not apply run as above.

    `attention_bias` is `attention_mask_adder`'s: [B, 1, 1, T] for plain rows, [B, 1, T, T] for packed rows.

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

    def call(self, x, attention_bias, training=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        heads = (batch, length, self.num_attention_heads, self.head_size)
        q, k, v = (ops.reshape(dense(x), heads) for dense in (self.query, self.key, self.value))  # [B, T, A, d]
        dropout = bool(training) and self.attention_dropout_rate > 0
        kernel = active_attention_kernel()
        # Packed rows ([B, 1, T, T] block-diagonal bias) keep today's attention: lengths cannot describe them.
        if kernel is not None and attention_bias.shape[2] == 1 and kernel.applies(q):
            if dropout:
                raise ValueError(f"The {kernel.name} attention kernel has no dropout on the attention probabilities, "
                                 f"but attention_dropout_rate={self.attention_dropout_rate}: set "
                                 f"model.attention_probs_dropout_prob: 0.0 or model.attention: einsum.")
            context = kernel(q, k, v, sequence_lengths(attention_bias), 1.0 / math.sqrt(self.head_size))
        elif not dropout and keras.backend.backend() != "tensorflow":
            context = self.fused_attention(q, k, v, attention_bias)
        elif training and recomputes(q):
            # The seed is drawn here, once per call, outside the recomputed region: the layer's state advances as
            # with plain dropout (exact resume), and the backward pass regenerates the forward's mask.
            seed = self.dropout.next_seed() if dropout else None
            context = self.recomputed_attention(q, k, v, attention_bias, seed)
        else:
            context = self.attention_with_dropout(q, k, v, attention_bias, training)
        return ops.reshape(context, (batch, length, self.hidden_size))

    def fused_attention(self, q, k, v, attention_bias):
        """`attention_with_dropout` without dropout, through `keras.ops.dot_product_attention`: one fused kernel
        where the backend has one (cuDNN flash attention under JAX on a GPU), in the [B, T, A, d] layout."""
        return ops.dot_product_attention(q, k, v, bias=attention_bias, scale=1.0 / math.sqrt(self.head_size))

    def attention_with_dropout(self, q, k, v, attention_bias, training=None):
        """softmax(q k^T / sqrt(d) + attention_bias) v with dropout on the probabilities, as the original;
        q, k, v and the result are [B, T, A, d]."""
        q, k, v = (ops.transpose(t, (0, 2, 1, 3)) for t in (q, k, v))  # [B, A, T, d]
        scores = self.scores(q, k)
        probs = ops.cast(self.probabilities(scores, attention_bias), self.compute_dtype)
        probs = self.dropout(probs, training=training)
        return ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3))

    def recomputed_attention(self, q, k, v, attention_bias, seed=None):
        """`attention_with_dropout` in training with a custom gradient that keeps only the 16-bit scores of the
        [B, A, T, T] region: the backward pass recomputes the float32 softmax, the dropout with `seed` (from
        `BertDropout.next_seed`; None: no dropout) and the dropped probabilities, then takes the two matrix
        multiplications' gradients and the softmax's. q, k, v and the result are [B, T, A, d]."""
        q, k, v = (ops.transpose(t, (0, 2, 1, 3)) for t in (q, k, v))  # [B, A, T, d]
        dropout = self.dropout

        def dropped(probs, seed):
            return probs if seed is None else dropout.dropout_with_seed(probs, seed)

        @ops.custom_gradient
        def softmax_dropout_matmul(scores, attention_bias, v, *seed):
            seed = seed[0] if seed else None
            probs = ops.cast(self.probabilities(scores, attention_bias), scores.dtype)
            context = ops.matmul(dropped(probs, seed), v)

            def grad(*args, upstream=None):
                if upstream is None:
                    (upstream,) = args
                # Tied to the backward pass, or XLA would keep the forward's [B, A, T, T] buffers instead.
                again = None if seed is None else tied_to_backward(seed, upstream)
                probs32 = self.probabilities(tied_to_backward(scores, upstream), attention_bias)
                probs = ops.cast(probs32, scores.dtype)
                d_v = ops.matmul(ops.transpose(dropped(probs, again), (0, 1, 3, 2)), upstream)
                # Dropout's gradient is the same mask and scale applied to the incoming gradient.
                d_probs = ops.cast(dropped(ops.matmul(upstream, ops.transpose(v, (0, 1, 3, 2))), again), "float32")
                d_logits = probs32 * (d_probs - ops.sum(d_probs * probs32, axis=-1, keepdims=True))
                return (ops.cast(d_logits, scores.dtype), None, d_v) + (() if seed is None else (None,))

            return context, grad

        context = softmax_dropout_matmul(self.scores(q, k), attention_bias, v, *(() if seed is None else (seed,)))
        return ops.transpose(context, (0, 2, 1, 3))

    def scores(self, q, k):
        """q k^T / sqrt(d) in the compute dtype, [B, A, T, T] from [B, A, T, d]."""
        return ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(self.head_size))

    def probabilities(self, scores, attention_bias):
        """The attention probabilities in float32: softmax(scores + bias), float32 under mixed precision too."""
        return ops.softmax(ops.cast(scores, "float32") + ops.cast(attention_bias, "float32"), axis=-1)

    def compute_output_shape(self, input_shape, mask_shape=None):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                      attention_dropout_rate=self.attention_dropout_rate,
                      initializer_range=self.initializer_range)
        return config

"""`MaskedLMHead`: the original `cls/predictions` head, computed only at the masked positions."""

import keras
from keras import ops

from bert_tf.modeling.activations import get_activation
from bert_tf.modeling.config_serialization import KeptArguments


def gather_positions(sequence, positions):
    """The original `gather_indexes`: [B, T, H] and [B, P] positions -> [B, P, H]."""
    batch, length, width = ops.shape(sequence)[0], ops.shape(sequence)[1], ops.shape(sequence)[2]
    num_positions = ops.shape(positions)[1]
    offsets = ops.arange(batch, dtype="int32")[:, None] * length
    flat_positions = ops.reshape(ops.cast(positions, "int32") + offsets, (-1,))
    flat_sequence = ops.reshape(sequence, (-1, width))
    return ops.reshape(ops.take(flat_sequence, flat_positions, axis=0), (batch, num_positions, width))


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedLMHead(KeptArguments, keras.layers.Layer):
    """Gathers the hidden states at `masked_lm_positions`, applies dense H->H + activation and LayerNorm, then
    multiplies by the transposed word-embedding table (the tied output weights) and adds `output_bias` [V].

    The embedding table is a call argument, not a weight of this layer, so the tie survives serialization: the
    model that owns both passes its encoder's table. Variables mirror `cls/predictions/`:
    `transform/dense/{kernel,bias}`, `transform/LayerNorm/{gamma,beta}`, `output_bias`.

    Args:
        vocab_size, hidden_size: V and H.
        hidden_act: activation of the transform (the encoder's, as in the original).
        initializer_range, layer_norm_eps: as in `BertConfig`.

    Example:
    >>> head = MaskedLMHead(vocab_size=30, hidden_size=8)
    >>> table = keras.random.normal((30, 8))
    >>> tuple(head(ops.ones((2, 5, 8)), ops.zeros((2, 3), "int32"), table).shape)
    (2, 3, 30)
    """

    def __init__(self, vocab_size, hidden_size, hidden_act="gelu_tanh", initializer_range=0.02,
                 layer_norm_eps=1e-12, **kwargs):
        super().__init__(**kwargs)
        self.keep_arguments(vocab_size=vocab_size, hidden_size=hidden_size, hidden_act=hidden_act,
                            initializer_range=initializer_range, layer_norm_eps=layer_norm_eps)
        self.dense = keras.layers.Dense(
            hidden_size, activation=get_activation(hidden_act),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range), dtype=self.dtype_policy,
            name="dense")
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, dtype="float32", name="LayerNorm")

    def build(self, input_shape=None):
        with keras.name_scope("transform"):
            self.dense.build((None, None, self.hidden_size))
            self.layer_norm.build((None, None, self.hidden_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,), initializer="zeros")

    def call(self, sequence_output, masked_lm_positions, word_embeddings):
        x = gather_positions(sequence_output, masked_lm_positions)
        x = ops.cast(self.layer_norm(self.dense(x)), self.compute_dtype)
        table = ops.cast(word_embeddings, self.compute_dtype)
        logits = ops.matmul(x, ops.transpose(table)) + ops.cast(self.output_bias, self.compute_dtype)
        return logits

    def compute_output_shape(self, sequence_shape, positions_shape=None, table_shape=None):
        return (sequence_shape[0], positions_shape[1] if positions_shape else None, self.vocab_size)

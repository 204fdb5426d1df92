"""`BertEmbeddings`: word + token-type + position embeddings, then LayerNorm and dropout."""

import math

import keras
from keras import ops

from bert_tf.modeling.config_serialization import KeptArguments
from bert_tf.modeling.dropout import BertDropout


def sinusoidal_position_table(num_positions, width):
    """The fixed sin/cos table of Vaswani et al. (an option; the original BERT learns its positions)."""
    positions = ops.cast(ops.arange(num_positions), "float32")[:, None]
    inv_freq = ops.exp(ops.cast(ops.arange(0, width, 2), "float32") * (-math.log(10000.0) / width))
    angles = positions * inv_freq[None, :]
    table = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)
    return ops.reshape(table, (num_positions, -1))[:, :width]


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbeddings(KeptArguments, keras.layers.Layer):
    """The original `embedding_lookup` + `embedding_postprocessor`.

    Variables mirror the TF1 scope `bert/embeddings/`: `word_embeddings`, `token_type_embeddings`,
    `position_embeddings` and `LayerNorm/{gamma,beta}`.

    Args:
        vocab_size, hidden_size, max_position_embeddings, type_vocab_size: table sizes.
        dropout_rate: dropout after the LayerNorm.
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_eps: LayerNorm epsilon.
        position_embedding_type: "learned" (original) or "sinusoidal".

    Example:
    >>> layer = BertEmbeddings(vocab_size=30, hidden_size=8, max_position_embeddings=16, type_vocab_size=2)
    >>> tuple(layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape)
    (2, 5, 8)
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings=512, type_vocab_size=2,
                 dropout_rate=0.1, initializer_range=0.02, layer_norm_eps=1e-12,
                 position_embedding_type="learned", **kwargs):
        super().__init__(**kwargs)
        self.keep_arguments(
            vocab_size=vocab_size, hidden_size=hidden_size, max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size, dropout_rate=dropout_rate, initializer_range=initializer_range,
            layer_norm_eps=layer_norm_eps, position_embedding_type=position_embedding_type)
        # LayerNorm statistics in float32 under mixed precision.
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, dtype="float32", name="LayerNorm")
        self.dropout = BertDropout(dropout_rate, dtype=self.dtype_policy)

    def build(self, input_shape=None):
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.hidden_size), initializer=init)
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(self.type_vocab_size, self.hidden_size), initializer=init)
        if self.position_embedding_type == "learned":
            self.position_embeddings = self.add_weight(
                name="position_embeddings", shape=(self.max_position_embeddings, self.hidden_size),
                initializer=init)
        self.layer_norm.build((None, None, self.hidden_size))

    def call(self, input_word_ids, input_type_ids, position_ids=None, training=None):
        """position_ids [B, T]: each token's position (packed rows restart it at every instance); None: 0..T-1."""
        seq_length = input_word_ids.shape[1]
        if seq_length is not None and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"Sequence length {seq_length} exceeds max_position_embeddings={self.max_position_embeddings}: "
                f"truncate inputs to at most {self.max_position_embeddings} tokens.")
        x = ops.take(self.word_embeddings, input_word_ids, axis=0)
        x = x + ops.take(self.token_type_embeddings, input_type_ids, axis=0)
        length = ops.shape(input_word_ids)[1]
        if position_ids is not None:
            x = x + ops.cast(ops.take(self.position_table(), ops.cast(position_ids, "int32"), axis=0), x.dtype)
            x = ops.cast(self.layer_norm(x), self.compute_dtype)
            return self.dropout(x, training=training)
        if self.position_embedding_type == "learned":
            # convert_to_tensor: under JAX (0.10) lax.slice no longer reads a Keras variable itself.
            table = ops.convert_to_tensor(self.position_embeddings)
            positions = ops.slice(table, (0, 0), (length, self.hidden_size))
        else:
            positions = sinusoidal_position_table(self.max_position_embeddings, self.hidden_size)
            positions = ops.cast(ops.slice(positions, (0, 0), (length, self.hidden_size)), x.dtype)
        x = x + positions[None, :, :]
        x = ops.cast(self.layer_norm(x), self.compute_dtype)
        return self.dropout(x, training=training)

    def position_table(self):
        """The [max_position_embeddings, H] table of position vectors (learned, or the fixed sinusoids)."""
        if self.position_embedding_type == "learned":
            return ops.convert_to_tensor(self.position_embeddings)
        return sinusoidal_position_table(self.max_position_embeddings, self.hidden_size)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None, position_ids_shape=None):
        return tuple(input_word_ids_shape) + (self.hidden_size,)

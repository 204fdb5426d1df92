"""`BertEncoder`: embeddings, L Transformer blocks and the pooler, with the TF Hub BERT dict interface."""

import keras
from keras import ops

from bert_tf.modeling.attention import attention_mask_adder
from bert_tf.modeling.config_serialization import BertConfigSerialization, as_config
from bert_tf.modeling.embeddings import BertEmbeddings
from bert_tf.modeling.transformer_block import TransformerBlock

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
# Packed rows (several instances per row, records/packed_rows.py) add both; without them the graph is the original's.
PACKED_ROW_INPUTS = ("input_position_ids", "input_instance_ids")


def check_inputs(inputs, required):
    """One clear error for a missing input key, naming what is there and what is needed."""
    if not isinstance(inputs, dict):
        raise TypeError(f"Expected a dict with keys {list(required)}, got {type(inputs).__name__}.")
    missing = [k for k in required if k not in inputs]
    if missing:
        raise KeyError(f"Missing input(s) {missing}: got keys {sorted(inputs)}, need {list(required)}.")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(BertConfigSerialization, keras.Model):
    """The BERT encoder of the original `BertModel`, as a Keras model with dict inputs and outputs.

    Inputs: `input_word_ids`, `input_mask` (1 real, 0 pad), `input_type_ids`, each int32 [B, T]; for packed rows
    (several instances per row) also `input_position_ids` (positions restarting at 0 in each instance) and
    `input_instance_ids` (which instance each token belongs to): attention then stays within each instance.
    Outputs: `sequence_output` [B, T, H], `pooled_output` [B, H] (tanh dense on the [CLS] vector) and
    `encoder_outputs`, the list of the L blocks' outputs. Variables are named after the TF1 scopes
    (`bert/embeddings/...`, `bert/encoder/layer_N/...`, `bert/pooler/dense/...`).

    Args:
        config: a `BertConfig` (or a dict of its fields).

    Example:
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
    >>> ids = ops.ones((2, 8), "int32")
    >>> out = encoder({"input_word_ids": ids, "input_mask": ids, "input_type_ids": ops.zeros_like(ids)})
    >>> tuple(out["sequence_output"].shape), tuple(out["pooled_output"].shape), len(out["encoder_outputs"])
    ((2, 8, 128), (2, 128), 2)
    """

    def __init__(self, config, name="bert", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = as_config(config)
        c = self.config
        self.embeddings = BertEmbeddings(
            vocab_size=c.vocab_size, hidden_size=c.hidden_size, max_position_embeddings=c.max_position_embeddings,
            type_vocab_size=c.type_vocab_size, dropout_rate=c.hidden_dropout_prob,
            initializer_range=c.initializer_range, layer_norm_eps=c.layer_norm_eps,
            position_embedding_type=c.position_embedding_type, dtype=self.dtype_policy, name="embeddings")
        # One attribute per block (not a list): tf.train.Checkpoint does not track Keras 3's wrapped lists.
        for i in range(c.num_hidden_layers):
            setattr(self, f"layer_{i}", TransformerBlock(
                hidden_size=c.hidden_size, num_attention_heads=c.num_attention_heads,
                intermediate_size=c.intermediate_size, hidden_act=c.hidden_act, dropout_rate=c.hidden_dropout_prob,
                attention_dropout_rate=c.attention_probs_dropout_prob, initializer_range=c.initializer_range,
                layer_norm_eps=c.layer_norm_eps, pre_layer_norm=c.pre_layer_norm, dtype=self.dtype_policy,
                name=f"layer_{i}"))
        # Pre-LN stacks need a LayerNorm after the last block; post-LN blocks end with one already.
        self.final_layer_norm = (
            keras.layers.LayerNormalization(epsilon=c.layer_norm_eps, dtype="float32", name="LayerNorm")
            if c.pre_layer_norm else None)
        self.pooler = keras.layers.Dense(
            c.hidden_size, activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=c.initializer_range), dtype=self.dtype_policy,
            name="dense")
        self.build()

    def build(self, input_shape=None):
        hidden_shape = (None, None, self.config.hidden_size)
        self.embeddings.build()
        with keras.name_scope("encoder"):
            for block in self.blocks:
                block.build(hidden_shape)
            if self.final_layer_norm is not None:
                self.final_layer_norm.build(hidden_shape)
        with keras.name_scope("pooler"):
            self.pooler.build((None, self.config.hidden_size))

    @property
    def blocks(self):
        """The Transformer blocks, first to last."""
        return [getattr(self, f"layer_{i}") for i in range(self.config.num_hidden_layers)]

    @property
    def word_embeddings(self):
        """The [V, H] word embedding table, which the masked-LM head shares."""
        return self.embeddings.word_embeddings

    def call(self, inputs, training=None):
        check_inputs(inputs, ENCODER_INPUTS)
        word_ids = ops.cast(inputs["input_word_ids"], "int32")
        type_ids = ops.cast(inputs["input_type_ids"], "int32")
        packed = all(name in inputs for name in PACKED_ROW_INPUTS)
        x = self.embeddings(word_ids, type_ids, inputs["input_position_ids"] if packed else None, training=training)
        mask_adder = attention_mask_adder(inputs["input_mask"], inputs["input_instance_ids"] if packed else None)
        encoder_outputs = []
        for block in self.blocks:
            x = block(x, mask_adder, training=training)
            encoder_outputs.append(x)
        if self.final_layer_norm is not None:
            x = ops.cast(self.final_layer_norm(x), self.compute_dtype)
            encoder_outputs[-1] = x
        pooled = self.pooler(x[:, 0, :])
        return {"sequence_output": x, "pooled_output": pooled, "encoder_outputs": encoder_outputs}


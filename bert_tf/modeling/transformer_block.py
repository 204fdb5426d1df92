"""`TransformerBlock`: the original post-LN encoder block (pre-LN as an option)."""

import keras
from keras import ops

from bert_tf.modeling.activations import get_activation
from bert_tf.modeling.attention import BertSelfAttention
from bert_tf.modeling.config_serialization import KeptArguments
from bert_tf.modeling.dropout import BertDropout


@keras.saving.register_keras_serializable(package="bert_tf")
class TransformerBlock(KeptArguments, keras.layers.Layer):
    """One block of the original `transformer_model`:

        x = LN(x + Dropout(Dense(Attention(x))))       # attention/output
        x = LN(x + Dropout(Dense(act(Dense(x)))))       # intermediate, output

    With `pre_layer_norm=True` the LayerNorms move in front of each sub-layer (x + Sublayer(LN(x))), an option
    the original does not have. Variables mirror the TF1 scope `layer_N/`: `attention/self/{query,key,value}`,
    `attention/output/{dense,LayerNorm}`, `intermediate/dense`, `output/{dense,LayerNorm}`.

    Args:
        hidden_size, num_attention_heads, intermediate_size: widths.
        hidden_act: activation name of `bert_tf.modeling.activations`.
        dropout_rate, attention_dropout_rate: the two dropout probabilities.
        initializer_range, layer_norm_eps: as in `BertConfig`.
        pre_layer_norm: False (original post-LN) or True.

    Example:
    >>> block = TransformerBlock(hidden_size=8, num_attention_heads=2, intermediate_size=32)
    >>> tuple(block(ops.ones((2, 5, 8)), ops.zeros((2, 1, 1, 5))).shape)
    (2, 5, 8)
    """

    def __init__(self, hidden_size, num_attention_heads, intermediate_size, hidden_act="gelu_tanh",
                 dropout_rate=0.1, attention_dropout_rate=0.1, initializer_range=0.02, layer_norm_eps=1e-12,
                 pre_layer_norm=False, **kwargs):
        super().__init__(**kwargs)
        self.keep_arguments(
            hidden_size=hidden_size, num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
            hidden_act=hidden_act, dropout_rate=dropout_rate, attention_dropout_rate=attention_dropout_rate,
            initializer_range=initializer_range, layer_norm_eps=layer_norm_eps, pre_layer_norm=pre_layer_norm)
        self.activation = get_activation(hidden_act)
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.self_attention = BertSelfAttention(
            hidden_size=hidden_size, num_attention_heads=num_attention_heads,
            attention_dropout_rate=attention_dropout_rate, initializer_range=initializer_range,
            dtype=self.dtype_policy, name="self")
        self.attention_output = keras.layers.Dense(hidden_size, kernel_initializer=init, dtype=self.dtype_policy,
                                                   name="dense")
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype="float32", name="LayerNorm")
        self.intermediate = keras.layers.Dense(intermediate_size, kernel_initializer=init, dtype=self.dtype_policy,
                                               name="dense")
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=init, dtype=self.dtype_policy,
                                               name="dense")
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype="float32", name="LayerNorm")
        self.dropout = BertDropout(dropout_rate, dtype=self.dtype_policy)

    def build(self, input_shape):
        hidden_shape = (None, None, self.hidden_size)
        with keras.name_scope("attention"):
            self.self_attention.build(hidden_shape)
            with keras.name_scope("output"):
                self.attention_output.build(hidden_shape)
                self.attention_layer_norm.build(hidden_shape)
        with keras.name_scope("intermediate"):
            self.intermediate.build(hidden_shape)
        with keras.name_scope("output"):
            self.output_dense.build((None, None, self.intermediate_size))
            self.output_layer_norm.build(hidden_shape)

    def _norm(self, layer_norm, x):
        return ops.cast(layer_norm(x), self.compute_dtype)

    def call(self, x, mask_adder, training=None):
        if self.pre_layer_norm:
            h = self.self_attention(self._norm(self.attention_layer_norm, x), mask_adder, training=training)
            x = x + self.dropout(self.attention_output(h), training=training)
            h = self.activation(self.intermediate(self._norm(self.output_layer_norm, x)))
            return x + self.dropout(self.output_dense(h), training=training)
        h = self.self_attention(x, mask_adder, training=training)
        x = self._norm(self.attention_layer_norm, x + self.dropout(self.attention_output(h), training=training))
        h = self.activation(self.intermediate(x))
        return self._norm(self.output_layer_norm, x + self.dropout(self.output_dense(h), training=training))

    def compute_output_shape(self, input_shape, mask_shape=None):
        return input_shape

"""`NextSentenceHead`: the original `cls/seq_relationship` classifier on the pooled output."""

import keras
from keras import ops

from bert_tf.modeling.config_serialization import KeptArguments


@keras.saving.register_keras_serializable(package="bert_tf")
class NextSentenceHead(KeptArguments, keras.layers.Layer):
    """logits = pooled @ output_weights^T + output_bias, with `output_weights` [2, H] as in the TF1 checkpoint.
    Label 0 means segment B really follows A; 1 means B is a random sentence.

    Args:
        hidden_size: H.
        initializer_range: stddev of the truncated-normal initializer.

    Example:
    >>> tuple(NextSentenceHead(hidden_size=8)(ops.ones((4, 8))).shape)
    (4, 2)
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.keep_arguments(hidden_size=hidden_size, initializer_range=initializer_range)

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights", shape=(2, self.hidden_size),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range))
        self.output_bias = self.add_weight(name="output_bias", shape=(2,), initializer="zeros")

    def call(self, pooled_output):
        return ops.matmul(pooled_output, ops.transpose(self.output_weights)) + self.output_bias

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 2)

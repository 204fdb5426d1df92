"""What the task models (`BertClassifier`, `BertTokenClassifier`, `BertSpanQA`) share: the encoder argument, its
`get_config` entry, and the original's output-layer initializer."""

import keras

from bert_tf.modeling.encoder import BertEncoder


def build_encoder(encoder):
    """A `BertEncoder` from a `BertConfig`/dict of its fields, or the given encoder layer as it is."""
    if isinstance(encoder, keras.layers.Layer):
        return encoder
    return BertEncoder(encoder)


def output_initializer(initializer_range):
    """The original run_classifier / run_squad output weights: truncated normal, stddev 0.02."""
    return keras.initializers.TruncatedNormal(stddev=initializer_range)


def encoder_config(encoder):
    """`{"encoder": ...}` for `get_config`; `from_encoder_config` is its inverse."""
    return {"encoder": keras.saving.serialize_keras_object(encoder)}


def from_encoder_config(config):
    config = dict(config)
    config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
    return config

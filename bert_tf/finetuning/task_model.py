"""What the task models (`BertClassifier`, `BertTokenClassifier`, `BertSpanQA`) share: the encoder argument, its
`get_config` entry, the original's output-layer initializer, dropout masks of their own on each replica, and the
dropout + dense classifier on one encoder output."""

import contextlib

import keras
import tensorflow as tf

from bert_tf.modeling.dropout import BertDropout, dropout_stream
from bert_tf.modeling.encoder import BertEncoder

# A compiled task model is saved with its optimizer and schedule: importing a task model's class registers them too,
# so that `keras.models.load_model` reads the `.keras` file bert-finetune writes once the class is imported.
from bert_tf.optimizers import adam_weight_decay, schedule  # noqa: F401


def build_encoder(encoder):
    """A `BertEncoder` from a `BertConfig`/dict of its fields, or the given encoder layer as it is."""
    if isinstance(encoder, keras.layers.Layer):
        return encoder
    return BertEncoder(encoder)


def output_initializer(initializer_range):
    """The original run_classifier / run_squad output weights: truncated normal, stddev 0.02."""
    return keras.initializers.TruncatedNormal(stddev=initializer_range)


def replica_dropout(training):
    """A context in which the `BertDropout` layers (the encoder's and the task head's) draw masks of this replica's
    own when `fit` or a custom loop trains under a `tf.distribute` strategy: Keras alone gives every replica the
    same masks (its seed state is mirrored). Outside a replica step, or not training, it changes nothing.

    Example:
    >>> with replica_dropout(training=True):
    ...     pass
    """
    context = tf.distribute.get_replica_context() if training else None
    if context is None or context.num_replicas_in_sync == 1:
        return contextlib.nullcontext()
    return dropout_stream(context.replica_id_in_sync_group, context.num_replicas_in_sync)


def encoder_config(encoder):
    """`{"encoder": ...}` for `get_config`; `from_encoder_config` is its inverse."""
    return {"encoder": keras.saving.serialize_keras_object(encoder)}


def from_encoder_config(config):
    config = dict(config)
    config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
    return config


class EncoderOutputClassifier(keras.Model):
    """Encoder -> one of its outputs (`ENCODER_OUTPUT`) -> dropout -> dense to `num_classes` logits, as the
    original run_classifier's `create_model`. `BertClassifier` reads `pooled_output`, `BertTokenClassifier`
    `sequence_output`.

    Example:
    >>> from bert_tf.finetuning import BertClassifier
    >>> from bert_tf.config import BertConfig
    >>> model = BertClassifier(BertConfig.preset("tiny", vocab_size=100), num_classes=3)
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> tuple(model({"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids * 0}).shape)
    (2, 3)
    """

    ENCODER_OUTPUT = None

    def __init__(self, encoder, num_classes, dropout_rate=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.encoder = build_encoder(encoder)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.dropout = BertDropout(dropout_rate)
        self.logits = keras.layers.Dense(num_classes, kernel_initializer=output_initializer(initializer_range),
                                         name="logits")

    def call(self, inputs, training=None):
        with replica_dropout(training):
            features = self.encoder(inputs, training=training)[self.ENCODER_OUTPUT]
            return self.logits(self.dropout(features, training=training))

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, **encoder_config(self.encoder),
                "num_classes": self.num_classes, "dropout_rate": self.dropout_rate,
                "initializer_range": self.initializer_range}

    @classmethod
    def from_config(cls, config):
        return cls(**from_encoder_config(config))

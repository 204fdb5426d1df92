"""`BertTokenClassifier`: a label per token (tagging, e.g. named entities) on the encoder's sequence output."""

import keras

from bert_tf.finetuning.task_model import build_encoder, encoder_config, from_encoder_config, output_initializer


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(keras.Model):
    """Encoder -> sequence output -> dropout -> dense to `num_classes` logits per token ([B, T, C]).

    Train with `SparseCategoricalCrossentropy(from_logits=True)` on labels [B, T] and `input_mask` as
    `sample_weight`, so padding does not count.

    Args:
        encoder: a `BertEncoder`, a `BertConfig` for a new one, or a layer returning `sequence_output`.
        num_classes: number of tags.
        dropout_rate: dropout on the sequence output during training.
        initializer_range: stddev of the output layer's truncated-normal initializer.

    Example:
    >>> model = BertTokenClassifier(bert_tf.load_encoder("model_dir"), num_classes=9)  # doctest: +SKIP
    >>> model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # doctest: +SKIP
    >>> model.fit(features, tags, sample_weight=features["input_mask"], epochs=3)  # doctest: +SKIP
    """

    def __init__(self, encoder, num_classes, dropout_rate=0.1, initializer_range=0.02, name="token_classifier",
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.encoder = build_encoder(encoder)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.dropout = keras.layers.Dropout(dropout_rate)
        self.logits = keras.layers.Dense(num_classes, kernel_initializer=output_initializer(initializer_range),
                                         name="logits")

    def call(self, inputs, training=None):
        sequence = self.encoder(inputs, training=training)["sequence_output"]
        return self.logits(self.dropout(sequence, training=training))

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, **encoder_config(self.encoder),
                "num_classes": self.num_classes, "dropout_rate": self.dropout_rate,
                "initializer_range": self.initializer_range}

    @classmethod
    def from_config(cls, config):
        return cls(**from_encoder_config(config))

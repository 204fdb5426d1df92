"""`BertTokenClassifier`: a label per token (tagging, e.g. named entities) on the encoder's sequence output."""

import keras

from bert_tf.finetuning.task_model import EncoderOutputClassifier


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(EncoderOutputClassifier):
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
    >>> xent = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    >>> model.compile(optimizer="adam", loss=xent)  # doctest: +SKIP
    >>> model.fit(features, tags, sample_weight=features["input_mask"])  # doctest: +SKIP
    """

    ENCODER_OUTPUT = "sequence_output"

    def __init__(self, encoder, num_classes, dropout_rate=0.1, initializer_range=0.02, name="token_classifier",
                 **kwargs):
        super().__init__(encoder, num_classes, dropout_rate, initializer_range, name=name, **kwargs)

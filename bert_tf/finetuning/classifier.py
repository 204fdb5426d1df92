"""`BertClassifier`: a sentence or sentence-pair classifier on the pooled [CLS] vector (the original
run_classifier.py model)."""

import keras

from bert_tf.finetuning.task_model import EncoderOutputClassifier


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(EncoderOutputClassifier):
    """Encoder -> pooled output -> dropout -> dense to `num_classes` logits, as the original `create_model`.

    Single sentences and pairs are the same model: a pair is packed as [CLS] A [SEP] B [SEP] with
    `input_type_ids` 0 for A and 1 for B (the preprocessing model's `text_pair` signature does that).

    Args:
        encoder: a `BertEncoder` (e.g. from `bert_tf.load_encoder`), a `BertConfig` for a new one, or any layer
            that maps the three id tensors to a dict with `pooled_output`.
        num_classes: number of labels.
        dropout_rate: dropout on the pooled output during training (0.1 in the original).
        initializer_range: stddev of the output layer's truncated-normal initializer.

    Example:
    >>> model = BertClassifier(bert_tf.load_encoder("model_dir"), num_classes=2)  # doctest: +SKIP
    >>> model.compile(optimizer=create_finetuning_optimizer(2e-5, num_train_steps=1000),
    ...               loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    ...               metrics=["accuracy"])  # doctest: +SKIP
    >>> model.fit(features, labels, epochs=3)  # doctest: +SKIP
    """

    ENCODER_OUTPUT = "pooled_output"

    def __init__(self, encoder, num_classes, dropout_rate=0.1, initializer_range=0.02, name="classifier", **kwargs):
        super().__init__(encoder, num_classes, dropout_rate, initializer_range, name=name, **kwargs)

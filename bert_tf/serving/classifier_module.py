"""`ClassifierModule`: the serving model of a fine-tuned classifier (of sequences or of tokens), from the three id
tensors to label probabilities, on core TensorFlow ops only."""

import tensorflow as tf

from bert_tf.serving.task_module import TaskModule


class ClassifierModule(TaskModule):
    """What the classifier and token classifier SavedModels hold (both written by
    `bert_tf.serving.export_classifier`).

    Signature `serving_default`: `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, seq]) ->
    `probabilities` (softmax over the labels) and `label_ids` (their argmax, int32): [batch, num_labels] and
    [batch] for a `BertClassifier`; [batch, seq, num_labels] and [batch, seq] for a `BertTokenClassifier`, whose
    padding positions get a label too (read those where `input_mask` is 1). The label names, in id order, are
    the asset `labels.txt` (one per line).

    Args:
        model: a `BertClassifier` or `BertTokenClassifier` (its `encoder` must be a `BertEncoder`).
        labels_file: the label names, one per line, line i = class i.

    Example:
    >>> module = ClassifierModule(classifier, "labels.txt")  # doctest: +SKIP
    >>> tf.saved_model.save(module, "classifier/1", signatures=module.signature_functions())  # doctest: +SKIP
    """

    @staticmethod
    def serving_outputs(logits):
        probabilities = tf.nn.softmax(logits, axis=-1)
        return {"probabilities": probabilities, "label_ids": tf.argmax(probabilities, -1, tf.int32)}

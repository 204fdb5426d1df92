"""`ClassifierModule`: the serving model of a fine-tuned classifier, from the three id tensors to label
probabilities, on core TensorFlow ops only."""

import tensorflow as tf

from bert_tf.serving.encoder_module import checked
from bert_tf.serving.input_checks import check_encoder_inputs, id_specs


class ClassifierModule(tf.__internal__.tracking.AutoTrackable):
    """What the classifier SavedModel holds (written by `bert_tf.serving.export_classifier`).

    Signature `serving_default`: `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, seq]) ->
    `probabilities` float32 [batch, num_labels] (softmax) and `label_ids` int32 [batch] (the argmax). The label
    names, in id order, are the asset `labels.txt` (one per line).

    Args:
        model: a `BertClassifier` (its `encoder` must be a `BertEncoder`, for the input checks).
        labels_file: the label names, one per line, line i = class i.

    Example:
    >>> module = ClassifierModule(classifier, "labels.txt")
    >>> tf.saved_model.save(module, "classifier/1", signatures=module.signature_functions())
    """

    def __init__(self, model, labels_file):
        config = model.encoder.config
        # A model never called yet has no head weights: one call on a dummy batch creates them.
        model({name: tf.ones([1, 2], tf.int32) for name in id_specs()}, training=False)
        # As in EncoderModule: only the plain tf.Variables are saved, the Keras model stays in the closure.
        self.variables = [v.value for v in model.variables]
        self.labels_file = tf.saved_model.Asset(labels_file)

        def serving_default(input_word_ids, input_mask, input_type_ids):
            inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}
            inputs = checked(inputs, check_encoder_inputs(inputs, config))
            probabilities = tf.nn.softmax(model(inputs, training=False), axis=-1)
            return {"probabilities": probabilities, "label_ids": tf.argmax(probabilities, -1, tf.int32)}

        self.serving_default = tf.function(serving_default, input_signature=list(id_specs().values()))

    def signature_functions(self):
        return {"serving_default": self.serving_default}

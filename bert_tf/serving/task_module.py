"""`TaskModule`: what the serving models of the fine-tuned task models share: the three id tensors in, checked
as the encoder's are, the Keras model run for inference, its outputs turned into the served tensors."""

import tensorflow as tf

from bert_tf.serving.encoder_module import checked
from bert_tf.serving.input_checks import check_encoder_inputs, id_specs


class TaskModule(tf.__internal__.tracking.AutoTrackable):
    """The root object of a task model's SavedModel, with the signature `serving_default`: `input_word_ids`,
    `input_mask`, `input_type_ids` (int32 [batch, seq]) -> `serving_outputs(model outputs)`; core TensorFlow
    ops only. Subclasses define `serving_outputs`: `ClassifierModule` (a `BertClassifier` or a
    `BertTokenClassifier`) and `SpanQAModule`.

    Args:
        model: a fine-tuning model whose `encoder` has a `config` (a `BertEncoder`, for the input checks).
        labels_file: the label names, one per line (line i = class i), saved as the asset `labels.txt`; None for
            a model without labels.

    Example:
    >>> module = SpanQAModule(span_qa)   # a subclass: TaskModule itself has no serving_outputs  # doctest: +SKIP
    >>> tf.saved_model.save(module, "span_qa/1", signatures=module.signature_functions())  # doctest: +SKIP
    """

    def __init__(self, model, labels_file=None):
        config = model.encoder.config
        # A model never called yet has no head weights: one call on a dummy batch creates them.
        model({name: tf.ones([1, 2], tf.int32) for name in id_specs()}, training=False)
        # As in EncoderModule: only the plain tf.Variables are saved, the Keras model stays in the closure.
        self.variables = [v.value for v in model.variables]
        if labels_file is not None:
            self.labels_file = tf.saved_model.Asset(labels_file)

        def serving_default(input_word_ids, input_mask, input_type_ids):
            inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}
            inputs = checked(inputs, check_encoder_inputs(inputs, config))
            return self.serving_outputs(model(inputs, training=False))

        self.serving_default = tf.function(serving_default, input_signature=list(id_specs().values()))

    def signature_functions(self):
        return {"serving_default": self.serving_default}

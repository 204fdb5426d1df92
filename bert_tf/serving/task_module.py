"""`TaskModule`: what the serving models of the fine-tuned task models share: the three id tensors in, checked
as the encoder's are, the Keras model run for inference, its outputs turned into the served tensors."""

import tensorflow as tf

from bert_tf.serving.encoder_module import plain_variables
from bert_tf.serving.input_checks import checked_inputs, id_specs
from bert_tf.serving.serving_module import ServingModule, graph_function


class TaskModule(ServingModule):
    """The root object of a task model's SavedModel, with the signature `serving_default`: `input_word_ids`,
    `input_mask`, `input_type_ids` (int32 [batch, seq]) -> `serving_outputs(model outputs)`; core TensorFlow
    ops only. Subclasses define `serving_outputs`: `ClassifierModule` (a `BertClassifier` or a
    `BertTokenClassifier`) and `SpanQAModule`.

    Args:
        model: a fine-tuning model whose `encoder` has a `config` (a `BertEncoder`, for the input checks).
        labels_file: the label names, one per line (line i = class i), saved as the asset `labels.txt`; None for
            a model without labels.

    Example:
    >>> module = SpanQAModule(span_qa)   # doctest: +SKIP
    >>> tf.saved_model.save(module, "span_qa/1", signatures=module.signature_functions())  # doctest: +SKIP
    """

    def __init__(self, model, labels_file=None):
        super().__init__()
        config = model.encoder.config
        # A model never called yet has no head weights: one call on a dummy batch creates them.
        model({name: tf.ones([1, 2], tf.int32) for name in id_specs()}, training=False)
        self.model_variables = plain_variables(model.variables)
        if labels_file is not None:
            self.labels_file = tf.saved_model.Asset(labels_file)

        def serving_default(input_word_ids, input_mask, input_type_ids):
            inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}
            return self.serving_outputs(model(checked_inputs(inputs, config), training=False))

        self.serving_default = graph_function(serving_default, input_signature=list(id_specs().values()))

    @staticmethod
    def serving_outputs(outputs):
        """The served tensors, from the Keras model's outputs."""
        raise NotImplementedError

"""`SpanQAModule`: the serving model of a fine-tuned `BertSpanQA`, from the three id tensors to the start and end
logits of the answer span, on core TensorFlow ops only."""

from bert_tf.serving.task_module import TaskModule

SPAN_OUTPUTS = ("start_logits", "end_logits")


class SpanQAModule(TaskModule):
    """What the span QA SavedModel holds (written by `bert_tf.serving.export_span_qa`).

    Signature `serving_default`: `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, seq], packed
    [CLS] question [SEP] passage [SEP]) -> `start_logits`, `end_logits` float32 [batch, seq], the Keras model's
    outputs. Padding positions get logits too: rank spans over the passage tokens only, as run_squad.py does.

    Args:
        model: a `BertSpanQA` (its `encoder` must be a `BertEncoder`, for the input checks).

    Example:
    >>> module = SpanQAModule(span_qa)  # doctest: +SKIP
    >>> tf.saved_model.save(module, "span_qa/1", signatures=module.signature_functions())  # doctest: +SKIP
    """

    @staticmethod
    def serving_outputs(outputs):
        return {name: outputs[name] for name in SPAN_OUTPUTS}

"""bert_tf: BERT pre-training for TensorFlow and Keras 3, faithful to the original paper and code.

The public names are imported when first used, so `import bert_tf` costs nothing and `bert_tf.BertEncoder` needs
only Keras (the layers are backend-neutral); `bert_tf.load_encoder` and the fine-tuning models bring TensorFlow.

Example:
>>> import bert_tf
>>> bert_tf.BertConfig.preset("tiny").hidden_size
128
"""

from bert_tf.lazy_exports import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "BertConfig": "bert_tf.config",
    "BertEncoder": "bert_tf.modeling.encoder",
    "BertPretrainer": "bert_tf.modeling.pretrainer",
    "load_encoder": "bert_tf.model_dir",
    "load_pretrainer": "bert_tf.model_dir",
    "BertClassifier": "bert_tf.finetuning.classifier",
    "BertSpanQA": "bert_tf.finetuning.span_qa",
    "BertTokenClassifier": "bert_tf.finetuning.token_classifier",
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

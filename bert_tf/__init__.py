"""bert_tf: BERT pre-training for TensorFlow and Keras 3, faithful to the original paper and code.

The public names are imported when first used, so `import bert_tf` costs nothing and `bert_tf.BertEncoder` needs
only Keras (the layers are backend-neutral); `bert_tf.load_encoder` and the fine-tuning models bring TensorFlow.

Example:
>>> import bert_tf
>>> bert_tf.BertConfig.preset("tiny").hidden_size
128
"""

import importlib

__version__ = "0.1.0"

# Public name -> the module that defines it.
_PUBLIC = {
    "BertConfig": "bert_tf.config",
    "BertEncoder": "bert_tf.modeling.encoder",
    "BertPretrainer": "bert_tf.modeling.pretrainer",
    "load_encoder": "bert_tf.model_dir",
    "load_pretrainer": "bert_tf.model_dir",
    "BertClassifier": "bert_tf.finetuning.classifier",
    "BertSpanQA": "bert_tf.finetuning.span_qa",
    "BertTokenClassifier": "bert_tf.finetuning.token_classifier",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'bert_tf' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))

"""SavedModels for serving and reuse: the encoder (TF Hub BERT API, core ops only), the encoder with its masked-LM
head, the tensorflow-text preprocessing model, and the fine-tuned task models (classifier, token classifier,
span QA); masked-word prediction from raw text through them (`MaskFiller`, `bert-fill-mask`); and the one way
back from an exported encoder to a native `BertEncoder`.

Example:
    paths = export_model_dir("runs/demo", "exported")   # exported/{encoder,encoder_mlm,preprocessing}/1
    encoder = tf.saved_model.load(paths["encoder"])
    outputs = encoder.signatures["serving_default"](input_word_ids=ids, input_mask=mask, input_type_ids=types)
"""

from bert_tf.serving.classifier_module import ClassifierModule
from bert_tf.serving.encoder_module import EncoderModule
from bert_tf.serving.export import (
    CLASSIFIER,
    ENCODER,
    ENCODER_MLM,
    PREPROCESSING,
    SPAN_QA,
    TOKEN_CLASSIFIER,
    export_classifier,
    export_encoder,
    export_model_dir,
    export_preprocessing,
    export_span_qa,
    version_dir,
)
from bert_tf.serving.fill_mask import MaskFiller, fill_mask
from bert_tf.serving.graph_ops import non_core_ops, saved_model_ops
from bert_tf.serving.reload import load_encoder_from_saved_model
from bert_tf.serving.reusable_module import ReusableModule
from bert_tf.serving.serving_module import ServingModule
from bert_tf.serving.span_qa_module import SpanQAModule
from bert_tf.serving.task_module import TaskModule

__all__ = [
    "ClassifierModule",
    "EncoderModule",
    "CLASSIFIER",
    "ENCODER",
    "ENCODER_MLM",
    "PREPROCESSING",
    "SPAN_QA",
    "TOKEN_CLASSIFIER",
    "export_classifier",
    "export_encoder",
    "export_model_dir",
    "export_preprocessing",
    "export_span_qa",
    "version_dir",
    "MaskFiller",
    "fill_mask",
    "non_core_ops",
    "saved_model_ops",
    "load_encoder_from_saved_model",
    "ReusableModule",
    "ServingModule",
    "SpanQAModule",
    "TaskModule",
]

"""SavedModels for serving and reuse: the encoder (TF Hub BERT API, core ops only), the encoder with its masked-LM
head, the tensorflow-text preprocessing model, and the fine-tuned task models (classifier, token classifier,
span QA); masked-word prediction from raw text through them (`MaskFiller`, `bert-fill-mask`); and the one way
back from an exported encoder to a native `BertEncoder`.

Example:
    paths = export_model_dir("runs/demo", "exported")   # exported/{encoder,encoder_mlm,preprocessing}/1
    encoder = tf.saved_model.load(paths["encoder"])
    outputs = encoder.signatures["serving_default"](input_word_ids=ids, input_mask=mask, input_type_ids=types)
"""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "CLASSIFIER": "bert_tf.serving.export",
    "ENCODER": "bert_tf.serving.export",
    "ENCODER_MLM": "bert_tf.serving.export",
    "PREPROCESSING": "bert_tf.serving.export",
    "SPAN_QA": "bert_tf.serving.export",
    "TOKEN_CLASSIFIER": "bert_tf.serving.export",
    "export_classifier": "bert_tf.serving.export",
    "export_encoder": "bert_tf.serving.export",
    "export_model_dir": "bert_tf.serving.export",
    "export_preprocessing": "bert_tf.serving.export",
    "export_span_qa": "bert_tf.serving.export",
    "version_dir": "bert_tf.serving.export",
    "MaskFiller": "bert_tf.serving.fill_mask",
    "fill_mask": "bert_tf.serving.fill_mask",
    "non_core_ops": "bert_tf.serving.graph_ops",
    "saved_model_ops": "bert_tf.serving.graph_ops",
    "load_encoder_from_saved_model": "bert_tf.serving.reload",
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

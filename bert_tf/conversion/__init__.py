"""Conversion between this package's model directory and other formats: released Google TF1 checkpoints and HF
safetensors in (`convert_tf1`, `convert_hf`), HF and keras-hub out. Each format's names are a rename table kept as
data (`tf1_names`, `hf_names`); `rename_table` applies one."""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "convert_hf": "bert_tf.conversion.from_hf",
    "convert_tf1": "bert_tf.conversion.from_tf1",
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""Conversion between this package's model directory and other formats: released Google TF1 checkpoints and HF
safetensors in (`convert_tf1`, `convert_hf`), HF and keras-hub out. Each format's names are a rename table kept as
data (`tf1_names`, `hf_names`); `rename_table` applies one."""

from bert_tf.conversion.from_hf import convert_hf
from bert_tf.conversion.from_tf1 import convert_tf1

__all__ = [
    "convert_hf",
    "convert_tf1",
]

"""Checkpoints: this package's checkpoint directory, and converters from Google TF1 and HF checkpoints."""

from bert_tf.model_dir import load_encoder, load_pretrainer, read_config, write_model_dir

"""This package's model directory -> a keras-hub preset folder that `keras_hub.models.BertBackbone.from_preset`
and `keras_hub.models.BertTokenizer.from_preset` load.

The weights go through the HF folder `to_hf` writes, which keras-hub reads with its own HF converter; keras-hub
then writes its preset. Only models keras-hub's BERT layers compute exactly are written: its `BertBackbone`
always uses the tanh GELU and a LayerNorm epsilon of 1e-12, and has no pre-training heads.
"""

import os
import tempfile

import tensorflow as tf

from bert_tf.atomic_output import check_output_directory, directory_written_atomically
from bert_tf.conversion.to_hf import export_hf
from bert_tf.errors import InputError
from bert_tf.model_dir import read_config, tokenizer_settings, vocab_path

KERAS_HUB_LAYER_NORM_EPS = 1e-12


def check_expressible(config):
    """Refuses a `BertConfig` keras-hub's `BertBackbone` would compute differently, naming the difference."""
    if config.hidden_act != "gelu_tanh":
        raise InputError(
            f"The model's hidden_act is {config.hidden_act!r}, but keras-hub's BertBackbone always computes the tanh "
            f"GELU (the original BERT's): its outputs would differ from this model's (by ~3e-3 for the exact GELU). "
            f"Export it with --to hf instead, which keeps the activation.")
    if config.layer_norm_eps != KERAS_HUB_LAYER_NORM_EPS:
        raise InputError(f"The model's layer_norm_eps is {config.layer_norm_eps:g}, but keras-hub's BertBackbone uses "
                         f"1e-12: export it with --to hf instead.")


def export_keras_hub(model_dir, output_dir, settings=None):
    """Writes a keras-hub preset folder (backbone config and weights, tokenizer and its vocabulary) from a model
    directory whose model keras-hub can express (`check_expressible`); the pre-training heads are not part of
    a keras-hub backbone. The tokenizer lower-cases and strips accents as the `TokenizerSettings` `settings` say
    (default: the model directory's, `model_dir.tokenizer_settings`); keras-hub's own HF reader would set its
    `lowercase` only, so an uncased model's tokenizer would keep the accents its vocab has none of.

    Example:
    >>> export_keras_hub("runs/demo", "keras_hub/demo")  # doctest: +SKIP
    'keras_hub/demo'
    >>> keras_hub.models.BertBackbone.from_preset("keras_hub/demo")  # doctest: +SKIP
    """
    import keras_hub

    check_expressible(read_config(model_dir))
    settings = settings or tokenizer_settings(model_dir)
    if vocab_path(model_dir) is None:
        raise InputError(f"{model_dir} holds no vocab.txt, which a keras-hub preset needs for its tokenizer: copy the "
                         f"model's vocab there as vocab.txt.")
    check_output_directory(output_dir)
    if tf.io.gfile.exists(output_dir) and tf.io.gfile.listdir(output_dir):
        raise InputError(f"--output {output_dir} is not empty: pass a new directory.")
    with tempfile.TemporaryDirectory() as scratch:
        hf_dir = export_hf(model_dir, os.path.join(scratch, "hf"), settings)
        backbone = keras_hub.models.BertBackbone.from_preset(hf_dir)
        tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab_path(model_dir), lowercase=settings.do_lower_case,
                                                   strip_accents=settings.strip_accents)
        with directory_written_atomically(output_dir) as partial:  # replaces an empty output_dir
            backbone.save_to_preset(partial)
            tokenizer.save_to_preset(partial)
    return output_dir

"""Reading an exported encoder SavedModel back into a native `BertEncoder` (for fine-tuning from
`--init_saved_model` with the whole Keras toolbox: `.keras` files, `get_config`, mixed precision)."""

import os

import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.errors import InputError, InputFileNotFoundError
from bert_tf.modeling.encoder import BertEncoder


def saved_model_asset(export_dir, name):
    """Path of an asset of an exported SavedModel; a clear error when it lacks it."""
    path = os.path.join(export_dir, "assets", name)
    if not tf.io.gfile.exists(path):
        raise InputFileNotFoundError(f"{export_dir} has no assets/{name}: pass an encoder SavedModel written by "
                                     f"bert-export (its encoder/<version> folder).")
    return path


def load_encoder_from_saved_model(export_dir):
    """A `BertEncoder` with the weights of an encoder SavedModel from `bert-export`, and its vocab and casing.

    Returns (encoder, vocab_file, do_lower_case); vocab_file lies inside `export_dir/assets`.

    Example:
    >>> encoder, vocab_file, do_lower_case = load_encoder_from_saved_model("exported/encoder/1")  # doctest: +SKIP
    """
    config = BertConfig.from_json_file(saved_model_asset(export_dir, "bert_config.json"))
    vocab_file = saved_model_asset(export_dir, "vocab.txt")
    loaded = tf.saved_model.load(export_dir)
    saved = {v.name.rsplit(":", 1)[0]: v for v in loaded.variables}
    encoder = BertEncoder(config)
    for variable in encoder.weights:
        # The dropout layers' RNG states are not weights a checkpoint needs to carry.
        if variable.path.startswith("seed_generator"):
            continue
        source = saved.get(variable.path)
        if source is None or tuple(source.shape) != tuple(variable.shape):
            raise InputError(f"{export_dir} has no variable {variable.path} of shape {tuple(variable.shape)}: pass "
                             f"an encoder SavedModel written by bert-export for this config.")
        variable.assign(source)
    return encoder, vocab_file, bool(loaded.do_lower_case.numpy())

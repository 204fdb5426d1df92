"""This package's checkpoint directory: `bert_config.json`, optional `vocab.txt`, and TF checkpoints
(`ckpt-N`) whose `model` object is a `BertPretrainer`.

`bert-convert` and `bert-pretrain` write it; `load_encoder` / `load_pretrainer` read it. A pre-training
`--model_dir` holds more objects next to `model` (optimizer, step, iterator), which loading ignores.
"""

import os
import shutil

import tensorflow as tf
from absl import logging

from bert_tf.config import BertConfig
from bert_tf.modeling.pretrainer import BertPretrainer

CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"


def read_config(model_dir):
    """The `BertConfig` stored in a checkpoint directory (this package's naming)."""
    path = os.path.join(model_dir, CONFIG_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"No {CONFIG_FILE} in {model_dir}: pass a directory written by bert-convert or bert-pretrain.")
    return BertConfig.from_json_file(path, original=False)


def vocab_path(model_dir):
    """The vocab file that travels with a checkpoint directory, or None."""
    path = os.path.join(model_dir, VOCAB_FILE)
    return path if os.path.exists(path) else None


def latest_checkpoint(model_dir):
    """Path prefix of the newest `ckpt-N` in `model_dir`; a clear error when there is none."""
    path = tf.train.latest_checkpoint(model_dir)
    if path is None:
        raise FileNotFoundError(
            f"No checkpoint in {model_dir}: expected a `checkpoint` file and ckpt-N files written by "
            "bert-convert or bert-pretrain.")
    return path


def write_model_dir(model_dir, model, vocab_file=None, step=0, heads=True):
    """Writes `model` (a `BertPretrainer`) with its config and vocab as a checkpoint directory.

    `heads=False` saves the encoder only (for encoder-only sources such as HF `BertModel` files), so that
    `load_pretrainer` warns that the heads start fresh instead of silently loading random ones.
    """
    os.makedirs(model_dir, exist_ok=True)
    model.config.to_json_file(os.path.join(model_dir, CONFIG_FILE))
    if vocab_file:
        shutil.copyfile(vocab_file, os.path.join(model_dir, VOCAB_FILE))
    saved = model if heads else tf.train.Checkpoint(encoder=model.encoder)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=saved), model_dir, max_to_keep=1)
    return manager.save(checkpoint_number=step)


def load_pretrainer(model_dir, checkpoint=None, **kwargs):
    """The `BertPretrainer` with its weights from a checkpoint directory, ready to call or to train further.

    Args:
        model_dir: a directory written by `bert-convert` or `bert-pretrain`.
        checkpoint: a specific `ckpt-N` prefix; the latest by default.
        **kwargs: passed to `BertPretrainer` (e.g. `dtype`, `use_next_sentence`).

    Example:
        model = bert_tf.load_pretrainer("converted/uncased_L-12_H-768_A-12")
    """
    model = BertPretrainer(read_config(model_dir), **kwargs)
    path = checkpoint or latest_checkpoint(model_dir)
    status = tf.train.Checkpoint(model=model).restore(path).expect_partial()
    try:
        status.assert_existing_objects_matched()
    except AssertionError:
        # Encoder-only sources (e.g. HF BertModel) have no pre-training heads; those start freshly initialized.
        status.assert_nontrivial_match()
        logging.warning("%s has no pre-training heads: the masked-LM and NSP heads are newly initialized.", path)
    return model


def load_encoder(model_dir, checkpoint=None, **kwargs):
    """The `BertEncoder` with its weights from a checkpoint directory (see `load_pretrainer`).

    Example:
        encoder = bert_tf.load_encoder("converted/all-minilm-l6-v2")
        outputs = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    """
    return load_pretrainer(model_dir, checkpoint, **kwargs).encoder

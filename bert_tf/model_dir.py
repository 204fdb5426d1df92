"""A model directory: `bert_config.json`, optional `vocab.txt`, and TF checkpoints (`ckpt-N`) whose `model` object
is a `BertPretrainer`.

`bert-convert` and `bert-pretrain` write one; `load_encoder` / `load_pretrainer`, `bert-export` and `bert-finetune`
read it. A pre-training `--model_dir` holds more objects next to `model` (optimizer, step, iterator), which
loading ignores. Every file goes through `tf.io.gfile`, so a directory on gs:// (as TPUs need) or any other
TensorFlow filesystem is written and read back like a local one. The config and vocab are written atomically
(`bert_tf/atomic_output.py`), so an interrupted write leaves the old file or the new one, never half of one.
"""

import os

import tensorflow as tf
from absl import logging

from bert_tf.atomic_output import make_directories, write_text_atomically
from bert_tf.config import BertConfig
from bert_tf.errors import InputFileNotFoundError
from bert_tf.file_io import is_remote
from bert_tf.modeling.pretrainer import BertPretrainer

CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"


def config_path(model_dir):
    return os.path.join(model_dir, CONFIG_FILE)


def has_config(model_dir):
    """Whether `model_dir` holds a `bert_config.json`."""
    return tf.io.gfile.exists(config_path(model_dir))


def read_config(model_dir):
    """The `BertConfig` stored in a model directory.

    >>> read_config("converted/uncased_L-12_H-768_A-12").hidden_size  # doctest: +SKIP
    768
    """
    path = config_path(model_dir)
    if not tf.io.gfile.exists(path):
        raise InputFileNotFoundError(
            f"No {CONFIG_FILE} in {model_dir}: pass a directory written by bert-convert or bert-pretrain.")
    with tf.io.gfile.GFile(path, "r") as f:
        return BertConfig.from_json_string(f.read(), path)


def write_config(model_dir, config):
    """Writes `config` as the directory's `bert_config.json` (see `BertConfig.to_json_dict`)."""
    write_text_atomically(config_path(model_dir), config.to_json_string())


def vocab_path(model_dir):
    """The vocab file that travels with a model directory, or None."""
    path = os.path.join(model_dir, VOCAB_FILE)
    return path if tf.io.gfile.exists(path) else None


def copy_vocab(vocab_file, model_dir):
    """Copies `vocab_file` into `model_dir` as `vocab.txt` (nothing to do when it is that file already)."""
    target = os.path.join(model_dir, VOCAB_FILE)
    if _same_path(vocab_file, target):
        return target
    with tf.io.gfile.GFile(vocab_file, "r") as f:
        write_text_atomically(target, f.read())
    return target


def latest_checkpoint(model_dir):
    """Path prefix of the newest `ckpt-N` in `model_dir`; a clear error when there is none."""
    path = tf.train.latest_checkpoint(model_dir)
    if path is None:
        raise InputFileNotFoundError(
            f"No checkpoint in {model_dir}: expected a `checkpoint` file and ckpt-N files written by "
            "bert-convert or bert-pretrain.")
    return path


def write_model_dir(model_dir, model, vocab_file=None, step=0, heads=True):
    """Writes `model` (a `BertPretrainer`) with its config and vocab as a model directory; returns the checkpoint.

    `heads=False` saves the encoder only (for encoder-only sources such as HF `BertModel` files), so that
    `load_pretrainer` warns that the heads start fresh instead of silently loading random ones.

    >>> write_model_dir("ram://converted", BertPretrainer(BertConfig.preset("tiny", vocab_size=64)))
    'ram://converted/ckpt-0'
    >>> load_pretrainer("ram://converted").config.vocab_size
    64
    """
    make_directories(model_dir)
    write_config(model_dir, model.config)
    if vocab_file:
        copy_vocab(vocab_file, model_dir)
    saved = model if heads else tf.train.Checkpoint(encoder=model.encoder)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=saved), model_dir, max_to_keep=1)
    return manager.save(checkpoint_number=step)


def restore_weights(model, path):
    """Restores `model`'s weights from a checkpoint prefix; heads missing from an encoder-only source start freshly
    initialized, with a warning. Returns whether the checkpoint had the pre-training heads."""
    status = tf.train.Checkpoint(model=model).restore(path).expect_partial()
    try:
        status.assert_existing_objects_matched()
    except AssertionError:
        # Encoder-only sources (e.g. HF BertModel) have no pre-training heads; those start freshly initialized.
        status.assert_nontrivial_match()
        logging.warning("%s has no pre-training heads: the masked-LM and NSP heads are newly initialized.", path)
        return False
    return True


def load_pretrainer(model_dir, checkpoint=None, **kwargs):
    """The `BertPretrainer` with its weights from a model directory, ready to call or to train further.

    Args:
        model_dir: a directory written by `bert-convert` or `bert-pretrain` (local, gs://, ...).
        checkpoint: a specific `ckpt-N` prefix; the latest by default.
        **kwargs: passed to `BertPretrainer` (e.g. `dtype`, `use_next_sentence`).

    >>> model = load_pretrainer("converted/uncased_L-12_H-768_A-12")  # doctest: +SKIP
    """
    model = BertPretrainer(read_config(model_dir), **kwargs)
    restore_weights(model, checkpoint or latest_checkpoint(model_dir))
    return model


def load_encoder(model_dir, checkpoint=None, **kwargs):
    """The `BertEncoder` with its weights from a model directory (see `load_pretrainer`).

    >>> encoder = load_encoder("converted/all-minilm-l6-v2")  # doctest: +SKIP
    >>> outputs = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})  # doctest: +SKIP
    """
    return load_pretrainer(model_dir, checkpoint, **kwargs).encoder


def _same_path(a, b):
    if is_remote(a) or is_remote(b):
        return a.rstrip("/") == b.rstrip("/")
    return os.path.abspath(a) == os.path.abspath(b)

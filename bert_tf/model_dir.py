"""A model directory: `bert_config.json`, optional `vocab.txt` (with its settings file `vocab.settings.json` when
the vocab has one: bert_tf/text/tokenizer_settings.py), and TF checkpoints (`ckpt-N`) whose `model` object
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
from bert_tf.text.tokenizer_settings import TokenizerSettings, settings_path

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


def copy_vocab(vocab_file, model_dir, settings=None):
    """Copies `vocab_file` into `model_dir` as `vocab.txt` (nothing to do when it is that file already), with its
    tokenizer settings: `settings` (a `TokenizerSettings`) where given, else its settings file where it has one. A
    vocab without settings leaves none (a settings file left by another vocab is removed), so readers use the
    defaults for it as they would for the source.

    >>> write_text_atomically("ram://vocabs/cased.txt", "[UNK]\\nCafé\\n")
    >>> TokenizerSettings.of(do_lower_case=False).write_beside("ram://vocabs/cased.txt")
    'ram://vocabs/cased.settings.json'
    >>> copy_vocab("ram://vocabs/cased.txt", "ram://copied")
    'ram://copied/vocab.txt'
    >>> TokenizerSettings.read("ram://copied/vocab.txt")
    TokenizerSettings(do_lower_case=False, strip_accents=False)
    """
    target = os.path.join(model_dir, VOCAB_FILE)
    settings = settings or TokenizerSettings.read(vocab_file)
    if not _same_path(vocab_file, target):
        with tf.io.gfile.GFile(vocab_file, "r") as f:
            write_text_atomically(target, f.read())
    if settings is not None:
        settings.write_beside(target)
    elif tf.io.gfile.exists(settings_path(target)):
        tf.io.gfile.remove(settings_path(target))
    return target


def tokenizer_settings(model_dir, do_lower_case=None, strip_accents=None):
    """How text is normalized for the model of `model_dir`: its vocab's settings file, under the flags given (a
    contradiction is an `InputError`), else the defaults (`TokenizerSettings.for_vocab`).

    >>> tokenizer_settings("ram://copied")
    TokenizerSettings(do_lower_case=False, strip_accents=False)
    """
    return TokenizerSettings.for_vocab(vocab_path(model_dir), do_lower_case, strip_accents)


def latest_checkpoint(model_dir):
    """Path prefix of the newest `ckpt-N` in `model_dir`; a clear error when there is none."""
    path = tf.train.latest_checkpoint(model_dir)
    if path is None:
        raise InputFileNotFoundError(
            f"No checkpoint in {model_dir}: expected a `checkpoint` file and ckpt-N files written by "
            "bert-convert or bert-pretrain.")
    return path


def write_model_dir(model_dir, model, vocab_file=None, step=0, heads=True, settings=None):
    """Writes `model` (a `BertPretrainer`) with its config and vocab as a model directory; returns the checkpoint.
    The vocab's tokenizer settings go with it (`copy_vocab`; `settings` where the source keeps them elsewhere, as
    Hugging Face's tokenizer_config.json).

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
        copy_vocab(vocab_file, model_dir, settings)
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

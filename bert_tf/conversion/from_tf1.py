"""Google's released TF1 BERT checkpoints -> this package's checkpoint directory.

A released directory (e.g. `uncased_L-12_H-768_A-12/`) holds `bert_model.ckpt.{index,data-*}`, the original
`bert_config.json` and `vocab.txt`. Its "gelu" becomes "gelu_tanh", which is what the original code computed.
Adam slots and `global_step` (in checkpoints users trained with the original code) are left out.
"""

import os

import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.conversion import rename_table, tf1_names
from bert_tf.errors import InputFileNotFoundError
from bert_tf.modeling.pretrainer import BertPretrainer

RELEASED_PREFIX = "bert_model.ckpt"


def checkpoint_prefix(input_dir):
    """The checkpoint in a TF1 directory: the released `bert_model.ckpt`, else the one its `checkpoint` file names."""
    released = os.path.join(input_dir, RELEASED_PREFIX)
    if tf.io.gfile.exists(released + ".index"):
        return released
    latest = tf.train.latest_checkpoint(input_dir)
    if latest is None:
        raise InputFileNotFoundError(f"No TF1 checkpoint in {input_dir}: expected {RELEASED_PREFIX}.index and "
                                     f"{RELEASED_PREFIX}.data-* (a released BERT directory) or a `checkpoint` file.")
    return latest


def convert_tf1(input_dir, output_dir, allow_vocab_mismatch=False):
    """Converts a TF1 BERT pre-training checkpoint directory to a model directory that `load_pretrainer` reads.

    Every non-optimizer variable must be in the TF1 rename table and every table entry in the checkpoint, with
    the shapes the config implies; anything else is an error naming the variable.

    Args:
        input_dir: a directory with `bert_model.ckpt.*`, the original `bert_config.json` and `vocab.txt`.
        output_dir: where the converted `bert_config.json`, `vocab.txt` and `ckpt-0` go (must hold no checkpoint).
        allow_vocab_mismatch: accept a vocab.txt whose size differs from the config's vocab_size.

    Returns:
        A `Conversion` summary.

    Example:
        print(convert_tf1("uncased_L-12_H-768_A-12", "converted/bert_base_uncased"))
        model = bert_tf.load_pretrainer("converted/bert_base_uncased")
    """
    if not tf.io.gfile.isdir(input_dir):
        raise InputFileNotFoundError(f"--input {input_dir} is not a directory: pass a released TF1 BERT directory.")
    config_file = os.path.join(input_dir, "bert_config.json")
    if not tf.io.gfile.exists(config_file):
        raise InputFileNotFoundError(f"No bert_config.json in {input_dir}: a TF1 checkpoint needs its original config.")
    rename_table.check_output_dir(output_dir)
    config = BertConfig.from_json_file(config_file)
    prefix = checkpoint_prefix(input_dir)
    reader = tf.train.load_checkpoint(prefix)
    all_names = reader.get_variable_to_shape_map()
    names = [name for name in all_names if not tf1_names.IGNORED.fullmatch(name)]
    model = BertPretrainer(config)
    fresh = rename_table.load_weights(model, names, reader.get_tensor,
                                    rename_table.expand(tf1_names.TABLE, config.num_hidden_layers), prefix)
    vocab_file = rename_table.optional_file(input_dir, "vocab.txt")
    path = rename_table.write(output_dir, model, vocab_file, config_file, allow_vocab_mismatch=allow_vocab_mismatch)
    return rename_table.Conversion(source=prefix, checkpoint=path, config=config, converted=len(names),
                                 ignored=len(all_names) - len(names), fresh=fresh, vocab_file=vocab_file)

"""What both converters share: applying a rename table (tf1_names, hf_names) to a checkpoint's arrays, with
clear errors for unknown, missing and mis-shaped variables, and writing the result as a model directory."""

import dataclasses
import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import model_dir as model_dir_lib
from bert_tf.config import BertConfig
from bert_tf.errors import InputError, OutputExistsError
from bert_tf.text.vocabulary import Vocabulary


@dataclasses.dataclass
class Conversion:
    """What a converter did: the checkpoint it wrote, from what, and which variables start fresh.

    Example:
        result = convert_hf("all-MiniLM-L6-v2", "converted/minilm")
        print(result)  # one line: source, output, counts, config
    """

    source: str
    checkpoint: str
    config: BertConfig
    converted: int
    ignored: int
    fresh: list
    vocab_file: str = None

    def __str__(self):
        c = self.config
        line = (f"converted {self.converted} variables from {self.source} to {self.checkpoint} "
                f"(L={c.num_hidden_layers} H={c.hidden_size} A={c.num_attention_heads} V={c.vocab_size}, "
                f"hidden_act={c.hidden_act}, layer_norm_eps={c.layer_norm_eps:g}); skipped {self.ignored} entries "
                f"that are not weights (optimizer slots, step, buffers, tied copies); "
                f"vocab: {self.vocab_file or 'none'}")
        if self.fresh:
            line += f"; newly initialized (not in the source): {', '.join(self.fresh)}"
        return line


def expand(rows, num_layers):
    """{source name: (Keras path, transpose)} from table rows (source, path, transpose); "{i}" is a layer index."""
    table = {}
    for source, path, transpose in rows:
        for i in range(num_layers) if "{i}" in source else (0,):
            table[source.format(i=i)] = (path.format(i=i), transpose)
    return table


def _some(names, limit=5):
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def load_weights(model, names, read, table, source, optional=()):
    """Copies a checkpoint's weights into `model` through an expanded rename table.

    Args:
        model: a `BertPretrainer` built from the checkpoint's config.
        names: the checkpoint's weight names (training state and buffers already left out).
        read: name -> NumPy array.
        table: from `expand`.
        source: the checkpoint's path, for messages.
        optional: names that may be absent; their variables keep their fresh initialization.

    Returns:
        The Keras paths of the variables left freshly initialized, sorted.
    """
    layers = model.config.num_hidden_layers
    unknown = sorted(set(names) - set(table))
    if unknown:
        raise InputError(f"{source} holds {_some(unknown)}, which no variable of a {layers}-layer BERT takes: pass "
                         "a BERT checkpoint together with its own config.")
    missing = sorted(set(table) - set(names) - set(optional))
    if missing:
        raise InputError(f"{source} lacks {_some(missing)}, which a {layers}-layer BERT needs: pass a complete BERT "
                         "checkpoint together with its own config.")
    variables = {v.path: v for v in model.weights}
    targets = {path for path, _ in table.values()}
    if targets != set(variables):
        mismatch = _some(sorted(targets ^ set(variables)))
        raise RuntimeError(f"The rename table and BertPretrainer disagree on {mismatch}.")
    fresh = []
    for name, (path, transpose) in table.items():
        if name not in names:
            fresh.append(path)
            continue
        value = np.asarray(read(name))
        value = value.T if transpose else value
        variable = variables[path]
        if value.shape != tuple(variable.shape):
            raise InputError(
                f"{source}: {name} has shape {value.shape}{' once transposed' if transpose else ''}, but {path} has "
                f"shape {tuple(variable.shape)} under the config: pass the config that belongs to this checkpoint.")
        variable.assign(value.astype(variable.dtype))
    return sorted(fresh)


def check_output_dir(output_dir):
    """A conversion never writes over an existing checkpoint (e.g. a pre-training run's)."""
    if tf.io.gfile.exists(os.path.join(output_dir, "checkpoint")):
        raise OutputExistsError(f"{output_dir} already holds a checkpoint: pass a new --output directory.")


def write(output_dir, model, vocab_file, config_source, heads=True, allow_vocab_mismatch=False, settings=None):
    """Writes the converted model with its config and vocab; returns the checkpoint path.

    A vocab whose size differs from the config's vocab_size is refused (ids past the vocab would never be produced,
    or ids of the vocab would have no embedding) unless `allow_vocab_mismatch`.
    """
    if vocab_file is None:
        logging.warning("No vocab.txt next to %s: the converted model has no vocab.", config_source)
    else:
        size = Vocabulary.from_file(vocab_file).size
        if size != model.config.vocab_size:
            message = (f"{vocab_file} has {size} tokens but {config_source} says vocab_size="
                       f"{model.config.vocab_size}")
            if not allow_vocab_mismatch:
                raise InputError(f"{message}: pass the vocab that belongs to this checkpoint, or "
                                 f"--allow_vocab_mismatch if the difference is intended (e.g. unused rows).")
            logging.warning("%s (allowed by --allow_vocab_mismatch).", message)
    return model_dir_lib.write_model_dir(output_dir, model, vocab_file, step=0, heads=heads, settings=settings)


def optional_file(directory, name):
    path = os.path.join(directory, name)
    return path if os.path.exists(path) else None

"""Continuing a checkpoint with an extended vocab (`bert-vocab --extend`): which rows are new, the grown vocab size,
and a restore that starts each new row from what the model knows.

Each new row of the word embeddings, and of the masked-LM output bias when the checkpoint has that head, starts
from the mean of the checkpoint's rows of the word's old pieces (its WordPiece tokens under the checkpoint's vocab),
so the word begins near what the model made of its pieces; every other weight is the checkpoint's. A vocab that
only fills `[unused*]` rows keeps the shapes; one with appended rows grows the table and the bias on restore (the
checkpoint is read into a model of its own size and copied over). A new token written as a special token ("[...]")
keeps the checkpoint's row (or, appended, a freshly initialized one).
"""

from absl import logging

from bert_tf import model_dir as model_dir_lib
from bert_tf.errors import InputError
from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.text.vocab_extension import new_rows
from bert_tf.text.vocabulary import Vocabulary


def extended_rows(init_checkpoint, vocab_file):
    """{row: old piece ids} of the rows `vocab_file` adds to the init checkpoint's vocab.txt ({} when it is that
    vocab, or when the checkpoint has no vocab.txt and the sizes agree). Raises `InputError` when `vocab_file` is not
    an extension of it.

    >>> extended_rows("converted/bert_base", "domain_vocab.txt")  # doctest: +SKIP
    {105: [8840, 2232, 8545, 2232], ...}
    """
    base_file = model_dir_lib.vocab_path(init_checkpoint)
    if base_file is None:
        if model_dir_lib.has_config(init_checkpoint) and vocab_file and \
                len(Vocabulary.from_file(vocab_file)) != model_dir_lib.read_config(init_checkpoint).vocab_size:
            raise InputError(f"--init_checkpoint={init_checkpoint} has no vocab.txt, so the rows that vocab_file "
                             f"{vocab_file} adds cannot be told apart: copy the checkpoint's vocab there (bert-convert "
                             f"writes it with --vocab_file).")
        return {}
    if not vocab_file:
        return {}
    return new_rows(Vocabulary.from_file(base_file), Vocabulary.from_file(vocab_file))


def grown_vocab_size(init_checkpoint, vocab_file):
    """The vocab size of a model that continues `init_checkpoint` with `vocab_file`: the size of `vocab_file` when it
    extends the checkpoint's vocab.txt beyond its last line, else None."""
    if not (vocab_file and init_checkpoint and model_dir_lib.vocab_path(init_checkpoint)):
        return None
    extended_rows(init_checkpoint, vocab_file)  # checks that it is an extension
    size = len(Vocabulary.from_file(vocab_file))
    return size if size > len(Vocabulary.from_file(model_dir_lib.vocab_path(init_checkpoint))) else None


def restore_with_new_rows(model, path, rows, checkpoint_vocab_size):
    """Restores `model` (a `BertPretrainer` whose vocab_size may exceed the checkpoint's) from the checkpoint prefix
    `path`, whose word embeddings have `checkpoint_vocab_size` rows, then sets each row in `rows` ({row: old piece
    ids}) of the word embeddings, and of the masked-LM output bias when the checkpoint has the head, to the mean of
    its pieces' rows. Returns `path`.

    Example:
    >>> restore_with_new_rows(model, "converted/ckpt-0", {30522: [8840, 2232]}, 30522)  # doctest: +SKIP
    """
    old_size, new_size = checkpoint_vocab_size, model.config.vocab_size
    if new_size < old_size:
        raise InputError(f"The model's vocab_size {new_size} is smaller than the {old_size} rows of {path}: use the "
                         f"checkpoint's vocab or one extended with bert-vocab --extend.")
    if new_size == old_size:
        has_heads = model_dir_lib.restore_weights(model, path)
    else:
        # Shapes differ, so the checkpoint is read into a model of its own size and copied over; the grown rows
        # keep the model's fresh initialization until set below.
        source = BertPretrainer(model.config.replace(vocab_size=old_size), use_next_sentence=model.use_next_sentence)
        has_heads = model_dir_lib.restore_weights(source, path)
        weights = {w.path: w for w in source.weights}
        for weight in model.weights:
            value = weights[weight.path].numpy()
            if tuple(weight.shape) != value.shape:
                grown = weight.numpy()
                grown[:old_size] = value
                value = grown
            weight.assign(value)
        logging.info("Grew the word embeddings and masked-LM output bias from %d to %d rows.", old_size, new_size)
    variables = [model.encoder.embeddings.word_embeddings] + ([model.masked_lm.output_bias] if has_heads else [])
    for variable in variables:
        value = variable.numpy()
        for row, pieces in rows.items():
            if max(pieces) >= old_size:
                raise InputError(f"Row {row} of the extended vocab has a piece id {max(pieces)} beyond the "
                                 f"checkpoint's {old_size} rows: extend the checkpoint's own vocab.txt.")
            value[row] = value[pieces].mean(axis=0)
        variable.assign(value)
    if rows:
        logging.info("%d new vocab rows start from the mean of their old pieces' rows (word embeddings%s).",
                     len(rows), " and masked-LM output bias" if has_heads else "")
    return path

"""Learning a WordPiece vocab from text (bert-vocab) and writing vocab files; `Vocabulary` reads them."""

import itertools
import time

import tensorflow as tf
from absl import logging

from bert_tf.atomic_output import write_text_atomically
from bert_tf.errors import InputError
from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary


def write_vocab(tokens, vocab_file):
    """Writes tokens one per line (ids are line numbers) with `write_text_atomically`, so an interrupted write never
    leaves a partial vocab under `vocab_file`.

    Example:
    >>> write_vocab(["[PAD]", "[UNK]", "the"], "vocab.txt")  # doctest: +SKIP
    """
    write_text_atomically(vocab_file, "".join(f"{t}\n" for t in tokens))


# Seconds between the progress lines while the text is read.
PROGRESS_SECONDS = 5.0
# Fewer tokens than this share of the size asked for is a warning: the text is too small for the vocab (the learner
# returns up to 5% fewer on a text that is large enough).
FEW_TOKENS_SHARE = 0.8


def learn_vocab(sentences, vocab_size, do_lower_case=True, batch_size=1024):
    """Learns a WordPiece vocab with tensorflow-text's `bert_vocab_from_dataset`; the special tokens come first.

    The text is normalized as `FullTokenizer` normalizes it (the original's clean-up, lower-casing and accent
    stripping) before learning, so the learned pieces are exactly the strings the tokenizer will look up.

    Args:
        sentences: an iterable of str.
        vocab_size: the target size (the learner returns approximately this many tokens).
        do_lower_case: lower-case and strip accents, as for an uncased model.

    Example:
    >>> tokens = learn_vocab(["The cat sat.", "The dog sat."] * 100, vocab_size=50)
    >>> tokens[:5]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    """
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as bert_vocab

    from bert_tf.text.normalization import normalize

    if vocab_size <= len(SPECIAL_TOKENS):
        raise InputError(f"vocab_size={vocab_size} leaves no room beside the {len(SPECIAL_TOKENS)} special tokens: "
                         f"use a few thousand (the original English vocab has 30522).")
    normalized = (text for text in (normalize(s, do_lower_case) for s in sentences) if text.strip())
    first = next(normalized, None)
    if first is None:  # the learner would end in a StopIteration
        raise InputError("The text to learn a vocab from is empty (no sentence with a character to keep): pass "
                         "UTF-8 text files with --input_file.")
    texts = _with_progress(itertools.chain([first], normalized))
    dataset = tf.data.Dataset.from_generator(lambda: texts, output_signature=tf.TensorSpec([], tf.string))
    started = time.perf_counter()
    learned = bert_vocab.bert_vocab_from_dataset(
        dataset.batch(batch_size), vocab_size=vocab_size, reserved_tokens=list(SPECIAL_TOKENS),
        # The text is already normalized; the learner only splits it on whitespace and punctuation.
        bert_tokenizer_params={"lower_case": False})
    tokens = list(SPECIAL_TOKENS) + [t for t in learned if t not in SPECIAL_TOKENS]
    logging.info("Learned %d tokens in %.1f s.", len(tokens), time.perf_counter() - started)
    Vocabulary(tokens, "the learned vocab").require(SPECIAL_TOKENS, "pre-training", pad_first=True)
    return tokens


def too_few_tokens(learned, vocab_size):
    """The warning's words when `learned` tokens are far fewer than the `vocab_size` asked for, else None.

    >>> too_few_tokens(41, 8000)[:44]
    'learned only 41 tokens of the 8000 asked for'
    >>> too_few_tokens(7700, 8000) is None
    True
    """
    if learned >= FEW_TOKENS_SHARE * vocab_size:
        return None
    return (f"learned only {learned} tokens of the {vocab_size} asked for: the text has too few distinct words and "
            f"pieces for this size. Use more text, or a --vocab_size near {learned} (a model's vocab_size follows "
            f"its vocab, so the smaller vocab is what a model of this text gets anyway).")


def _with_progress(texts):
    """Yields `texts`, logging how many were read every `PROGRESS_SECONDS`, and when the reading is done (the
    learner then counts and builds the pieces)."""
    started = last = time.perf_counter()
    count = characters = 0
    for text in texts:
        count += 1
        characters += len(text)
        now = time.perf_counter()
        if now - last >= PROGRESS_SECONDS:
            logging.info("Reading the text: %d sentences (%.1f M characters) in %.0f s.", count, characters / 1e6,
                         now - started)
            last = now
        yield text
    logging.info("Read %d sentences (%.1f M characters) in %.1f s; learning the WordPiece pieces.", count,
                 characters / 1e6, time.perf_counter() - started)

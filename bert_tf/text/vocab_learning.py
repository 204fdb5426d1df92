"""Learning a WordPiece vocab from text (bert-vocab) and writing vocab files; `Vocabulary` reads them."""

import itertools

import tensorflow as tf

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
    texts = itertools.chain([first], normalized)
    dataset = tf.data.Dataset.from_generator(lambda: texts, output_signature=tf.TensorSpec([], tf.string))
    learned = bert_vocab.bert_vocab_from_dataset(
        dataset.batch(batch_size), vocab_size=vocab_size, reserved_tokens=list(SPECIAL_TOKENS),
        # The text is already normalized; the learner only splits it on whitespace and punctuation.
        bert_tokenizer_params={"lower_case": False})
    tokens = list(SPECIAL_TOKENS) + [t for t in learned if t not in SPECIAL_TOKENS]
    Vocabulary(tokens, "the learned vocab").require(SPECIAL_TOKENS, "pre-training", pad_first=True)
    return tokens

"""Learning a WordPiece vocab from text (bert-vocab) and writing vocab files; `Vocabulary` reads them.

The words are counted in parallel processes (bert_tf/text/word_counting.py), then the pieces are learned from
the counts (bert_tf/text/wordpiece_learner.py: an alphabet sized to the text, no "##" token the tokenizer can
never produce, pair merges up to the size asked for).
"""

import dataclasses
import functools
import time

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


# Fewer tokens than this share of the size asked for is a warning: the text is too small for the vocab (the
# learner returns the size asked for whenever the text has enough pairs of pieces occurring twice).
FEW_TOKENS_SHARE = 0.8


@dataclasses.dataclass(frozen=True)
class LearnedVocab:
    """A learned vocab's tokens (special tokens first) and what its alphabet kept of the text's characters.

    Example:
    >>> learned = learn_vocab(["The cat sat.", "The dog sat."] * 100, vocab_size=50)
    >>> learned.tokens[:5], learned.alphabet_size, learned.distinct_characters
    (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], 10, 10)
    """

    tokens: list
    alphabet_size: int
    distinct_characters: int
    unknown_character_share: float  # of the text's character occurrences, outside the alphabet

    def alphabet_line(self):
        """The alphabet for people: how many characters it kept and what share of the text falls outside it."""
        from bert_tf.text.wordpiece_learner import DEFAULT_MAX_ALPHABET_SHARE

        kept = ("every one" if self.alphabet_size == self.distinct_characters else
                f"the most frequent, as many as {DEFAULT_MAX_ALPHABET_SHARE:.0%} of the vocab")
        return (f"alphabet: {self.alphabet_size} of the text's {self.distinct_characters} distinct characters "
                f"({kept}); {self.unknown_character_share:.4%} of the character occurrences fall outside it (their "
                f"words are [UNK])")


def check_vocab_size(vocab_size):
    """InputError unless `vocab_size` leaves room for pieces beside the special tokens (before reading any text)."""
    if vocab_size <= len(SPECIAL_TOKENS):
        raise InputError(f"vocab_size={vocab_size} leaves no room beside the {len(SPECIAL_TOKENS)} special tokens: "
                         f"use a few thousand (the original English vocab has 30522).")


def learn_vocab(sentences, vocab_size, normalize_text=None, processes=None):
    """Learns a WordPiece vocab of `vocab_size` tokens; the special tokens come first.

    The text is normalized as the tokenizer will normalize it, so the learned pieces are exactly the strings the
    tokenizer will look up.

    Args:
        sentences: an iterable of str.
        vocab_size: the size asked for, special tokens included; fewer come back only from a text too small.
        normalize_text: str -> str, picklable (for the counting processes); default: the original's uncased
            normalization (`normalize` with `do_lower_case=True`).
        processes: processes counting the words (default: the CPUs this process may use).

    Example:
    >>> tokens = learn_vocab(["The cat sat.", "The dog sat."] * 100, vocab_size=50).tokens
    >>> tokens[:5], "sat" in tokens
    (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], True)
    """
    from bert_tf.text.normalization import normalize
    from bert_tf.text.word_counting import count_words

    check_vocab_size(vocab_size)
    normalize_text = normalize_text or functools.partial(normalize, do_lower_case=True)
    return learn_vocab_from_words(count_words(sentences, normalize_text, processes).words, vocab_size)


def learn_vocab_from_words(words, vocab_size):
    """`learn_vocab` from word counts ({normalized word: count}, e.g. `count_words(...).words`).

    Example:
    >>> learn_vocab_from_words({"the": 9, "cat": 3, ".": 3}, vocab_size=30).tokens[5:]
    ['t', 'e', 'h', '.', 'a', 'c', '##t', '##e', '##h', '##a', 'th', 'the', 'ca', 'cat']
    """
    from bert_tf.text.wordpiece_learner import learn_pieces

    check_vocab_size(vocab_size)
    if not words:
        raise InputError("The text to learn a vocab from is empty (no sentence with a character to keep): pass "
                         "UTF-8 text files with --input_file.")
    started = time.perf_counter()
    pieces, alphabet = learn_pieces(words, vocab_size - len(SPECIAL_TOKENS))
    tokens = list(SPECIAL_TOKENS) + pieces  # no piece holds "[" (punctuation)
    Vocabulary(tokens, "the learned vocab").require(SPECIAL_TOKENS, "pre-training", pad_first=True)
    logging.info("Learned %d tokens in %.1f s.", len(tokens), time.perf_counter() - started)
    return LearnedVocab(tokens, len(alphabet.characters), len(alphabet.counts), alphabet.unknown_share())


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

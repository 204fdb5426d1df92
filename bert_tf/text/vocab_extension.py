"""Extending a released WordPiece vocab with a domain's words (`bert-vocab --extend`), and reading back which rows
of an extended vocab are new (what `bert-pretrain --init_checkpoint` initialises from the old pieces).

The rule, stated once here:
- Candidates are the corpus's words, normalized and split as the tokenizer does (lower-cased and accent-stripped
  for an uncased vocab), that the base vocab splits into two or more pieces, none of them [UNK], and that occur at
  least `min_frequency` times.
- Score = frequency x (pieces - 1): the tokens the word would save on the corpus. Highest first (ties by the word).
- Only whole words are added, never "##" continuations: a new word-initial token changes the pieces of exactly the
  words it is a prefix of (WordPiece matches the longest vocab prefix first) and the continuations after it use the
  base's "##" pieces, so every other word keeps its pieces; a new "##" piece would re-split the middle of words
  all over the corpus.
- They fill the base's `[unused*]` rows in id order after the first `keep_unused` of them (left free for the
  user's own special tokens), so every existing token keeps its id and line and the size stays. `max_new_tokens`
  counts ALL new tokens: when it exceeds the free `[unused]` rows, the rest are appended after the last line.
"""

import collections
import dataclasses
import re

import numpy as np

from bert_tf.errors import InputError
from bert_tf.text.normalization import is_punctuation, normalize, split_words
from bert_tf.text.vocabulary import Vocabulary

UNUSED_TOKEN = re.compile(r"\[unused\d+\]")
# Rows a user's own special tokens can take: [unused0]..[unused99] stay free unless asked otherwise.
DEFAULT_KEEP_UNUSED = 100
DEFAULT_MIN_FREQUENCY = 5


@dataclasses.dataclass(frozen=True)
class AddedToken:
    """A word written into the vocab: its row, its corpus count, its pieces under the base vocab, its score."""

    token: str
    row: int
    count: int
    old_pieces: tuple
    appended: bool

    @property
    def score(self):
        return self.count * (len(self.old_pieces) - 1)


@dataclasses.dataclass(frozen=True)
class VocabExtension:
    """The extended vocab's tokens (ids are line numbers), what was added and the `[unused]` rows left free."""

    tokens: tuple
    added: tuple
    free_unused: tuple


def count_words(sentences, do_lower_case=True, strip_accents=None):
    """Counter of the words of `sentences` as the tokenizer splits them (normalized, whitespace and punctuation).

    >>> count_words(["Begat, begat!"])["begat"]
    2
    """
    counts = collections.Counter()
    for sentence in sentences:
        counts.update(split_words(normalize(sentence, do_lower_case, strip_accents)))
    return counts


def word_pieces(tokenizer, words):
    """The WordPiece tokens of each word (already normalized), one list per word."""
    ids, splits = tokenizer.tokenize_to_ids(list(words))
    return [tokenizer.convert_ids_to_tokens(ids[a:b]) for a, b in zip(splits[:-1], splits[1:])]


def extend_vocab(base_vocab, word_counts, keep_unused=DEFAULT_KEEP_UNUSED, max_new_tokens=None,
                 min_frequency=DEFAULT_MIN_FREQUENCY):
    """Writes the corpus's most frequent, most split words into `base_vocab`'s `[unused*]` rows (see the module).

    Args:
        base_vocab: a `Vocabulary`, vocab file or tokens (the released vocab).
        word_counts: {normalized word: count}, e.g. from `count_words`.
        keep_unused: how many `[unused*]` rows (the first ones, in id order) stay free.
        max_new_tokens: None fills the free `[unused]` rows only (the size stays); else at most this many new
            tokens in all, appended after the last line where the free `[unused]` rows run out.
        min_frequency: a word occurring fewer times is not added.

    Example:
    >>> base = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "beg", "##at", "a"]
    >>> extension = extend_vocab(base, {"begat": 9, "a": 50}, keep_unused=1, min_frequency=2)
    >>> extension.tokens[2], [(t.token, t.row, t.old_pieces) for t in extension.added]
    ('begat', [('begat', 2, ('beg', '##at'))])
    """
    base = Vocabulary.of(base_vocab)
    if keep_unused < 0:
        raise InputError(f"--keep_unused={keep_unused} must be >= 0 (the [unused] rows left free).")
    if max_new_tokens is not None and max_new_tokens < 0:
        raise InputError(f"--max_new_tokens={max_new_tokens} must be >= 0 (new tokens in all).")
    unused_rows = [i for i, token in enumerate(base.tokens) if UNUSED_TOKEN.fullmatch(token)]
    free, fillable = unused_rows[:keep_unused], unused_rows[keep_unused:]
    frequent = sorted(word for word, count in word_counts.items() if count >= min_frequency)
    from bert_tf.text.tokenizer import FullTokenizer  # TensorFlow: late, so bert-vocab's flags load without it

    tokenizer = FullTokenizer(base, do_lower_case=False)  # the words are normalized already
    candidates = [AddedToken(word, -1, word_counts[word], tuple(pieces), False)
                  for word, pieces in zip(frequent, word_pieces(tokenizer, frequent))
                  if len(pieces) >= 2 and "[UNK]" not in pieces]
    candidates.sort(key=lambda c: (-c.score, c.token))
    wanted = len(fillable) if max_new_tokens is None else max_new_tokens
    tokens = list(base.tokens)
    added = []
    for i, candidate in enumerate(candidates[:wanted]):
        appended = i >= len(fillable)
        row = len(tokens) if appended else fillable[i]
        if appended:
            tokens.append(candidate.token)
        else:
            tokens[row] = candidate.token
        added.append(dataclasses.replace(candidate, row=row, appended=appended))
    # Unfilled [unused] rows stay free too.
    free = tuple(free + fillable[len(added):])
    return VocabExtension(tuple(tokens), tuple(added), free)


def tokens_per_word(tokenizer, word_counts):
    """Mean WordPiece tokens per word over a corpus's word counts; punctuation marks (a token each) are not words.

    >>> from bert_tf.text.tokenizer import FullTokenizer
    >>> tokens_per_word(FullTokenizer(["[UNK]", "beg", "##at", "a"]), {"begat": 1, "a": 1, ".": 5})
    1.5
    """
    words = [w for w in word_counts if not (len(w) == 1 and is_punctuation(w))]
    if not words:
        return float("nan")
    lengths = np.array([len(p) for p in word_pieces(tokenizer, words)])
    counts = np.array([word_counts[w] for w in words])
    return float((lengths * counts).sum() / counts.sum())


def changed_words(base_tokenizer, extended_tokenizer, words):
    """{word: (old pieces, new pieces)} for the words whose pieces differ between the two vocabs."""
    words = list(words)
    old, new = word_pieces(base_tokenizer, words), word_pieces(extended_tokenizer, words)
    return {w: (tuple(a), tuple(b)) for w, a, b in zip(words, old, new) if a != b}


def new_rows(base_vocab, extended_vocab):
    """{row: the row ids of its old pieces} for the rows of `extended_vocab` that are new words, checking that it
    extends `base_vocab` (every base token keeps its line, except `[unused*]` rows, which may be filled; rows after
    the base's last line are appended). A new token written as a special token ("[...]") is not a word: its row is
    not listed, so it keeps the checkpoint's row.

    >>> base = ["[PAD]", "[unused0]", "[UNK]", "beg", "##at"]
    >>> new_rows(base, ["[PAD]", "begat", "[UNK]", "beg", "##at", "[DOMAIN]", "begs"])
    {1: [3, 4], 6: [2]}
    """
    base, extended = Vocabulary.of(base_vocab), Vocabulary.of(extended_vocab)
    if extended.size < base.size:
        raise InputError(f"{extended.source} has {extended.size} tokens, fewer than the {base.size} of the "
                         f"checkpoint's {base.source}: an extended vocab keeps every line; make it with "
                         f"bert-vocab --extend.")
    changed = [i for i, (a, b) in enumerate(zip(base.tokens, extended.tokens)) if a != b]
    for i in changed:
        if not UNUSED_TOKEN.fullmatch(base.tokens[i]):
            raise InputError(f"{extended.source} line {i + 1} is {extended.tokens[i]!r} where the checkpoint's "
                             f"{base.source} has {base.tokens[i]!r}: an extended vocab keeps every token at its "
                             f"line (only [unused*] rows may change); make it with bert-vocab --extend.")
    rows = [i for i in changed + list(range(base.size, extended.size))
            if not (extended.tokens[i].startswith("[") and extended.tokens[i].endswith("]"))]
    from bert_tf.text.tokenizer import FullTokenizer

    tokenizer = FullTokenizer(base, do_lower_case=False)
    pieces = word_pieces(tokenizer, [extended.tokens[i] for i in rows])
    return {row: tokenizer.convert_tokens_to_ids(p) for row, p in zip(rows, pieces)}

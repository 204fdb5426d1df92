"""`Vocabulary`: a WordPiece vocab's tokens in id order and the ids of its special tokens, the one reader of vocab
files.

A vocab file holds one token per line; a token's id is its line number (from 0). The original `load_vocab` strips
each line and keeps every line, so this does too. What a vocab must hold depends on its use, so each use asks for
it with `require`: tokenizing needs only [UNK] (the original's own test vocab has no [PAD] or [MASK]); pre-training
data needs all of `SPECIAL_TOKENS` with [PAD] at id 0, since records pad with 0.
"""

import dataclasses
import functools
import os

import numpy as np

from bert_tf.errors import InputError, InputFileNotFoundError, InputIsADirectoryError
from bert_tf.file_io import file_exists, is_directory, open_binary

# The tokens a pre-training vocab holds; bert-vocab writes them first, in this order.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# What each use of a vocab needs.
TOKENIZING_TOKENS = ("[UNK]",)
MASKING_TOKENS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")


def read_vocab_file(vocab_file):
    """The tokens of a vocab file in id order (the original's `load_vocab`: each line stripped), local or on
    any tf.io.gfile filesystem.

    Example:
    >>> read_vocab_file("vocab.txt")[:2]  # doctest: +SKIP
    ['[PAD]', '[unused0]']
    """
    vocab_file = os.fspath(vocab_file)
    if not file_exists(vocab_file):
        raise InputFileNotFoundError(f"vocab_file {vocab_file!r} does not exist: pass a WordPiece vocab (one token per "
                                     f"line), e.g. the model's vocab.txt or one learned with bert-vocab.")
    if is_directory(vocab_file):
        raise InputIsADirectoryError(
            f"vocab_file {vocab_file!r} is a directory: pass the vocab file in it (vocab.txt).")
    with open_binary(vocab_file) as f:
        lines = f.read().decode("utf-8", "ignore").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last token
    return [line.strip() for line in lines]


@dataclasses.dataclass(frozen=True, eq=False)
class Vocabulary:
    """WordPiece tokens in id order, with the ids of [PAD], [UNK], [CLS], [SEP] and [MASK] (None when absent).

    Args:
        tokens: the tokens in id order.
        source: how errors name the vocab, e.g. "vocab_file 'vocab.txt'".

    Example:
    >>> vocab = Vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s"])
    >>> vocab.size, vocab.cls_id, vocab.mask_id, vocab.is_subword.tolist()[-2:]
    (7, 2, 4, [False, True])
    >>> Vocabulary(["[UNK]", "[CLS]", "[SEP]", "want"]).require(TOKENIZING_TOKENS).pad_id is None
    True
    """

    tokens: tuple
    source: str = "the vocab"

    def __post_init__(self):
        object.__setattr__(self, "tokens", tuple(self.tokens))
        if len(self.token_to_id) != len(self.tokens):
            seen = set()
            twice = next(t for t in self.tokens if t in seen or seen.add(t))
            raise InputError(f"{self.source} lists the token {twice!r} twice: each token must appear on one line "
                             f"only.")

    def __reduce__(self):
        # Pickled for worker processes: the tokens only; the lookup tables are rebuilt there.
        return Vocabulary, (self.tokens, self.source)

    @classmethod
    def from_file(cls, vocab_file):
        """The vocab of a file (local or any tf.io.gfile filesystem)."""
        return cls(read_vocab_file(vocab_file), f"vocab_file {os.fspath(vocab_file)!r}")

    @classmethod
    def of(cls, vocab):
        """`vocab` as a Vocabulary: a Vocabulary, a vocab file's path, or tokens in id order."""
        if isinstance(vocab, Vocabulary):
            return vocab
        if isinstance(vocab, (str, os.PathLike)):
            return cls.from_file(vocab)
        return cls(vocab)

    @functools.cached_property
    def token_to_id(self):
        return {token: i for i, token in enumerate(self.tokens)}

    @functools.cached_property
    def is_subword(self):
        """Bool array [size]: which tokens continue a word ("##" pieces), for whole-word masking."""
        return np.array([t.startswith("##") for t in self.tokens], dtype=bool)

    @property
    def size(self):
        return len(self.tokens)

    def __len__(self):
        return len(self.tokens)

    def id_of(self, token):
        """The id of `token`, or None if the vocab lacks it."""
        return self.token_to_id.get(token)

    pad_id = property(lambda self: self.id_of("[PAD]"))
    unk_id = property(lambda self: self.id_of("[UNK]"))
    cls_id = property(lambda self: self.id_of("[CLS]"))
    sep_id = property(lambda self: self.id_of("[SEP]"))
    mask_id = property(lambda self: self.id_of("[MASK]"))

    def require(self, tokens=SPECIAL_TOKENS, purpose="pre-training", pad_first=False):
        """Returns self if it holds `tokens` (and [PAD] at id 0 with `pad_first`, as records need); else a
        ValueError that names what is missing, what needs it and how to fix it."""
        missing = [t for t in tokens if t not in self.token_to_id]
        if missing:
            raise InputError(f"{self.source} lacks the special token(s) {missing}: {purpose} needs "
                             f"{list(tokens)}. Add them at the top of the file, or learn a vocab with bert-vocab "
                             f"(it always adds {list(SPECIAL_TOKENS)}).")
        if pad_first and self.pad_id != 0:
            raise InputError(f"{self.source} has {self.tokens[0]!r} at id 0, not [PAD]: records pad with id 0, so "
                             f"[PAD] must be the first line.")
        return self

"""The original WordPiece tokenizer (tokenization.FullTokenizer), batched on tensorflow-text's FastBertTokenizer."""

import functools

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text.normalization import (
    MAX_CHARS_PER_WORD,
    has_overlong_word,
    normalize,
    split_words,
    strips_accents,
    unassigned_characters,
)
from bert_tf.text.tokenizer_settings import TokenizerSettings
from bert_tf.text.vocabulary import TOKENIZING_TOKENS, Vocabulary

# UTF-8 takes at most 4 bytes a character: FastBertTokenizer counts a word's bytes, the original its characters.
_MAX_BYTES_PER_WORD = 4 * MAX_CHARS_PER_WORD
_BATCH = 4096


class FullTokenizer:
    """Text -> WordPiece ids exactly as the original `tokenization.FullTokenizer`, many sentences per call.

    Normalization follows the original character by character (bert_tf/text/normalization.py); splitting on
    whitespace and punctuation and the greedy longest-match WordPiece run inside `FastBertTokenizer`.

    Args:
        vocab: a `Vocabulary`, a vocab file path or its tokens in id order. Tokenizing needs only [UNK], as the
            original; what a later stage needs ([CLS], [SEP], [MASK], [PAD] at id 0) that stage asks of
            `tokenizer.vocabulary`.
        do_lower_case: lower-case (uncased models), and strip accents unless `strip_accents` says otherwise, as
            the original flag.
        strip_accents: strip accents (NFD, then drop the marks); None: as `do_lower_case`. A vocab's own settings
            are `TokenizerSettings.for_vocab(vocab_file)` (bert_tf/text/tokenizer_settings.py).

    Example:
    >>> tokenizer = FullTokenizer(["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "un", "runn", "##ing", ","])
    >>> tokenizer.tokenize("UNwant\u00e9d,running")
    ['un', '##want', '##ed', ',', 'runn', '##ing']
    >>> ids, row_splits = tokenizer.tokenize_to_ids(["unwanted", "running x"])
    >>> ids.tolist(), row_splits.tolist()
    ([6, 4, 5, 7, 8, 0], [0, 3, 6])
    """

    def __init__(self, vocab, do_lower_case=True, strip_accents=None):
        self.vocabulary = Vocabulary.of(vocab).require(TOKENIZING_TOKENS, "tokenizing")
        self.vocab = list(self.vocabulary.tokens)
        self.do_lower_case = bool(do_lower_case)
        self.strip_accents = strips_accents(do_lower_case, strip_accents)
        self.token_to_id = self.vocabulary.token_to_id
        self.unk_id = self.vocabulary.unk_id
        self._fast = tf_text.FastBertTokenizer(
            self.vocab, suffix_indicator="##", max_bytes_per_word=_MAX_BYTES_PER_WORD, token_out_type=tf.int32,
            unknown_token="[UNK]", lower_case_nfd_strip_accents=False)

    @classmethod
    def for_vocab(cls, vocab_file, do_lower_case=None, strip_accents=None):
        """The tokenizer of `vocab_file` with its settings file's normalization, under the flags given (not None;
        a contradiction is an `InputError`), else the original's defaults (`TokenizerSettings.for_vocab`).

        Example:
        >>> tokenizer = FullTokenizer.for_vocab("data/vocab.txt")  # doctest: +SKIP
        """
        settings = TokenizerSettings.for_vocab(vocab_file, do_lower_case, strip_accents)
        return cls(vocab_file, settings.do_lower_case, settings.strip_accents)

    @property
    def settings(self):
        """The `TokenizerSettings` this tokenizer normalizes with (what its exports carry)."""
        return TokenizerSettings(self.do_lower_case, self.strip_accents)

    @property
    def vocab_size(self):
        return self.vocabulary.size

    def tokenize_to_ids(self, texts):
        """Ids of many texts at once: (ids int32 [total], row_splits int64 [len(texts) + 1])."""
        normalized = [normalize(t, self.do_lower_case, self.strip_accents) for t in texts]
        values, lengths = [], []
        for start in range(0, len(normalized), _BATCH):
            batch = normalized[start:start + _BATCH]
            tokens = self._ragged_ids(batch)
            batch_values, batch_lengths = tokens.flat_values.numpy(), tokens.row_lengths().numpy()
            # The rare text with a word over the original's 200-character limit or an unassigned character is
            # redone word by word.
            rare = [i for i, text in enumerate(batch) if has_overlong_word(text) or unassigned_characters(text)]
            if rare:
                rows = np.split(batch_values, np.cumsum(batch_lengths)[:-1])
                for i in rare:
                    rows[i] = self._ids_word_by_word(batch[i])
                batch_values, batch_lengths = np.concatenate(rows), np.array([len(r) for r in rows])
            values.append(batch_values)
            lengths.append(batch_lengths)
        row_splits = np.zeros(len(texts) + 1, np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=row_splits[1:])
        ids = np.concatenate(values).astype(np.int32) if values else np.zeros([0], np.int32)
        return ids, row_splits

    def _ids_word_by_word(self, text):
        words = split_words(text)
        rows = self._ragged_ids(words).to_list() if words else []
        ids = [[self.unk_id] if len(word) > MAX_CHARS_PER_WORD or unassigned_characters(word) - self._vocab_characters
               else row for word, row in zip(words, rows)]
        return np.array([i for row in ids for i in row], np.int32)

    @functools.cached_property
    def _vocab_characters(self):
        return {char for token in self.vocab for char in token}

    def _ragged_ids(self, texts):
        tokens = self._fast.tokenize(tf.constant(texts, tf.string))
        return tokens.merge_dims(1, 2) if tokens.shape.rank == 3 else tokens

    def tokenize(self, text):
        """The WordPiece tokens of one text."""
        ids, _ = self.tokenize_to_ids([text])
        return self.convert_ids_to_tokens(ids)

    def convert_tokens_to_ids(self, tokens):
        return [self.token_to_id[t] for t in tokens]

    def convert_ids_to_tokens(self, ids):
        return [self.vocab[int(i)] for i in ids]

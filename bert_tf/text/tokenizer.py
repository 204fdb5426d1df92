"""The original WordPiece tokenizer (tokenization.FullTokenizer), batched on tensorflow-text's FastBertTokenizer."""

import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text.normalization import MAX_CHARS_PER_WORD, has_overlong_word, normalize, split_words
from bert_tf.text.vocab import check_vocab, load_vocab

# UTF-8 takes at most 4 bytes a character: FastBertTokenizer counts a word's bytes, the original its characters.
_MAX_BYTES_PER_WORD = 4 * MAX_CHARS_PER_WORD
_BATCH = 4096


class FullTokenizer:
    """Text -> WordPiece ids exactly as the original `tokenization.FullTokenizer`, many sentences per call.

    Normalization follows the original character by character (bert_tf/text/normalization.py); splitting on
    whitespace and punctuation and the greedy longest-match WordPiece run inside `FastBertTokenizer`.

    Args:
        vocab: a vocab file path or its tokens in id order. Must hold [PAD] (id 0), [UNK], [CLS], [SEP], [MASK].
        do_lower_case: lower-case and strip accents (uncased models), as the original flag.

    Example:
    >>> tokenizer = FullTokenizer("vocab.txt", do_lower_case=True)
    >>> tokenizer.tokenize("Unaffable, Jim!")
    ['una', '##ffa', '##ble', ',', 'jim', '!']
    >>> ids, row_splits = tokenizer.tokenize_to_ids(["Hello world.", "Hi"])
    >>> ids.tolist(), row_splits.tolist()
    ([7592, 2088, 1012, 7632], [0, 3, 4])
    """

    def __init__(self, vocab, do_lower_case=True):
        source = "the vocab"
        if isinstance(vocab, (str, os.PathLike)):
            source = f"vocab_file {os.fspath(vocab)!r}"
            vocab = load_vocab(vocab)
        self.vocab = list(vocab)
        check_vocab(self.vocab, source)
        self.do_lower_case = bool(do_lower_case)
        self.token_to_id = {t: i for i, t in enumerate(self.vocab)}
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            self.token_to_id[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))
        self._fast = tf_text.FastBertTokenizer(
            self.vocab, suffix_indicator="##", max_bytes_per_word=_MAX_BYTES_PER_WORD, token_out_type=tf.int32,
            unknown_token="[UNK]", lower_case_nfd_strip_accents=False)

    @property
    def vocab_size(self):
        return len(self.vocab)

    def is_subword(self):
        """Bool array [vocab_size]: which tokens continue a word ("##" pieces), for whole-word masking."""
        return np.array([t.startswith("##") for t in self.vocab], dtype=bool)

    def tokenize_to_ids(self, texts):
        """Ids of many texts at once: (ids int32 [total], row_splits int64 [len(texts) + 1])."""
        normalized = [normalize(t, self.do_lower_case) for t in texts]
        values, lengths = [], []
        for start in range(0, len(normalized), _BATCH):
            batch = normalized[start:start + _BATCH]
            tokens = self._ragged_ids(batch)
            batch_values, batch_lengths = tokens.flat_values.numpy(), tokens.row_lengths().numpy()
            # The rare text with a word over the original's 100-character limit is redone word by word.
            overlong = [i for i, text in enumerate(batch) if has_overlong_word(text)]
            if overlong:
                rows = np.split(batch_values, np.cumsum(batch_lengths)[:-1])
                for i in overlong:
                    rows[i] = self._ids_with_overlong_words(batch[i])
                batch_values, batch_lengths = np.concatenate(rows), np.array([len(r) for r in rows])
            values.append(batch_values)
            lengths.append(batch_lengths)
        row_splits = np.zeros(len(texts) + 1, np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=row_splits[1:])
        ids = np.concatenate(values).astype(np.int32) if values else np.zeros([0], np.int32)
        return ids, row_splits

    def _ids_with_overlong_words(self, text):
        words = split_words(text)
        rows = self._ragged_ids(words).to_list()
        ids = [[self.unk_id] if len(word) > MAX_CHARS_PER_WORD else row for word, row in zip(words, rows)]
        return np.array([i for row in ids for i in row], np.int32)

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

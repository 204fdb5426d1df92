"""Texts -> the encoder's id arrays, as the original run_classifier's `convert_single_example`."""

import numpy as np

from bert_tf.errors import InputError
from bert_tf.text.packing import pack_spans, pair_keep_lengths


def truncate_pair(tokens_a, tokens_b, max_length):
    """The original `_truncate_seq_pair` on two lists, in place: the longer one loses its last tokens first.

    Example:
    >>> a, b = list(range(10)), list(range(10))
    >>> truncate_pair(a, b, 15)
    >>> len(a), len(b)
    (8, 7)
    """
    keep_a, keep_b = pair_keep_lengths(len(tokens_a), len(tokens_b), max_length)
    del tokens_a[keep_a:], tokens_b[keep_b:]


def encode_texts(tokenizer, texts_a, texts_b, max_seq_length):
    """[CLS] A [SEP] (B [SEP]), truncated and zero-padded to `max_seq_length` -> dict of int32 [N, T] arrays
    `input_word_ids`, `input_mask`, `input_type_ids`.

    Args:
        tokenizer: a `bert_tf.text.tokenizer.FullTokenizer` (its vocab must hold [CLS] and [SEP]).
        texts_a, texts_b: lists of strings; `texts_b` None for single sentences.
        max_seq_length: T, including [CLS] and [SEP]s.

    Example:
    >>> features = encode_texts(FullTokenizer("vocab.txt"), ["Hello world!"], None, 8)  # doctest: +SKIP
    >>> features["input_word_ids"][0].tolist()  # doctest: +SKIP
    [101, 7592, 2088, 999, 102, 0, 0, 0]
    """
    specials = 3 if texts_b is not None else 2
    if max_seq_length <= specials:
        raise InputError(f"max_seq_length={max_seq_length} leaves no room for text after [CLS] and [SEP]s.")
    vocab = tokenizer.vocabulary.require(("[CLS]", "[SEP]"), "packing texts for the encoder")
    ids_a, splits_a = tokenizer.tokenize_to_ids(texts_a)
    a_start, len_a = splits_a[:-1], np.diff(splits_a)
    if texts_b is None:
        keep_a = np.minimum(len_a, max_seq_length - specials)
        ids, mask, type_ids = pack_spans(ids_a, a_start, a_start + keep_a, max_seq_length, vocab.cls_id,
                                         vocab.sep_id)
    else:
        ids_b, splits_b = tokenizer.tokenize_to_ids(texts_b)
        keep_a, keep_b = pair_keep_lengths(len_a, np.diff(splits_b), max_seq_length - specials)
        b_start = splits_b[:-1] + len(ids_a)
        ids, mask, type_ids = pack_spans(np.concatenate([ids_a, ids_b]), a_start, a_start + keep_a, max_seq_length,
                                         vocab.cls_id, vocab.sep_id, b_start=b_start, b_stop=b_start + keep_b)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": type_ids}

"""Texts -> the encoder's id arrays, as the original run_classifier's `convert_single_example`."""

import numpy as np


def truncate_pair(tokens_a, tokens_b, max_length):
    """The original `_truncate_seq_pair`: drop the last token of the longer list until both fit."""
    while len(tokens_a) + len(tokens_b) > max_length:
        (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()


def encode_texts(tokenizer, texts_a, texts_b, max_seq_length):
    """[CLS] A [SEP] (B [SEP]), truncated and zero-padded to `max_seq_length` -> dict of int32 [N, T] arrays
    `input_word_ids`, `input_mask`, `input_type_ids`.

    Args:
        tokenizer: a `bert_tf.text.tokenizer.FullTokenizer`.
        texts_a, texts_b: lists of strings; `texts_b` None for single sentences.
        max_seq_length: T, including [CLS] and [SEP]s.

    Example:
    >>> features = encode_texts(FullTokenizer("vocab.txt"), ["Hello world!"], None, 8)
    >>> features["input_word_ids"][0].tolist()
    [101, 7592, 2088, 999, 102, 0, 0, 0]
    """
    specials = 3 if texts_b is not None else 2
    if max_seq_length <= specials:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for text after [CLS] and [SEP]s.")
    ids_a, splits_a = tokenizer.tokenize_to_ids(texts_a)
    if texts_b is not None:
        ids_b, splits_b = tokenizer.tokenize_to_ids(texts_b)
    count = len(texts_a)
    word_ids = np.zeros((count, max_seq_length), np.int32)
    type_ids = np.zeros((count, max_seq_length), np.int32)
    mask = np.zeros((count, max_seq_length), np.int32)
    for i in range(count):
        a = ids_a[splits_a[i]:splits_a[i + 1]].tolist()
        b = ids_b[splits_b[i]:splits_b[i + 1]].tolist() if texts_b is not None else []
        if texts_b is not None:
            truncate_pair(a, b, max_seq_length - 3)
        else:
            a = a[:max_seq_length - 2]
        tokens = [tokenizer.cls_id] + a + [tokenizer.sep_id]
        segments = [0] * len(tokens)
        if texts_b is not None:
            tokens += b + [tokenizer.sep_id]
            segments += [1] * (len(b) + 1)
        word_ids[i, :len(tokens)] = tokens
        type_ids[i, :len(tokens)] = segments
        mask[i, :len(tokens)] = 1
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}

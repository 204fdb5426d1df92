"""Looking into records of the original format: an instance as text, and the structure rules every record keeps.

Used by bert-inspect-data; works on the numpy batches of `reader.read_records` (v1 names).
"""

import numpy as np

from bert_tf.records.word_starts import WORD_STARTS_FEATURE


def describe_instance(record, vocab):
    """One record as text: [CLS] A [SEP] B [SEP] with each predicted position shown as {shown|label}.

    Example:
    >>> print(describe_instance(record, vocab))  # doctest: +SKIP
    next_sentence_label: 1 (random next), length 12, 2 predictions
    [CLS] in the {[MASK]|beginning} god created [SEP] and the {dog|earth} was [SEP]
    """
    length = int(record["input_mask"].sum())
    ids = record["input_ids"][:length]
    count = int(record["masked_lm_weights"].sum())
    labels = dict(zip(record["masked_lm_positions"][:count].tolist(), record["masked_lm_ids"][:count].tolist()))
    words = []
    for position, token_id in enumerate(ids.tolist()):
        token = vocab[token_id]
        if position in labels:
            token = f"{{{token}|{vocab[labels[position]]}}}"
        words.append(token)
    label = int(record["next_sentence_labels"][0])
    return (f"next_sentence_label: {label} ({'random next' if label else 'actual next'}), length {length}, "
            f"{count} predictions\n" + " ".join(words))


def structure_problems(batch, cls_id, sep_id):
    """Counts of records that break the original instance structure ([CLS] A [SEP] B [SEP], padding, predictions),
    by rule: all zero for well-formed data."""
    ids, mask, segments = batch["input_ids"], batch["input_mask"], batch["segment_ids"]
    positions, labels, weights = batch["masked_lm_positions"], batch["masked_lm_ids"], batch["masked_lm_weights"]
    num_rows, seq_len = ids.shape
    col = np.arange(seq_len)[None, :]
    lengths = mask.sum(axis=1)
    real = col < lengths[:, None]
    counts = weights.sum(axis=1).astype(np.int64)
    slots = np.arange(positions.shape[1])[None, :] < counts[:, None]
    # A predicted position may show any vocab token (the random 10%, [CLS] and [SEP] included): the structure is
    # checked on the other positions and on the labels.
    predicted = np.zeros_like(real)
    np.put_along_axis(predicted, np.where(slots, positions, 0), slots, axis=1)
    predicted[:, 0] = False
    sep = (ids == sep_id) & real & ~predicted
    first_sep = np.argmax(sep, axis=1)
    segment_expected = (col > first_sep[:, None]) & real
    problems = {
        "input_mask not 1...1 0...0": int(np.sum(np.any(mask != real, axis=1))),
        "padding ids not 0": int(np.sum(np.any((ids != 0) & ~real, axis=1))),
        "not [CLS] first": int(np.sum(ids[:, 0] != cls_id)),
        "not exactly two [SEP], one last": int(np.sum((sep.sum(axis=1) != 2) | (ids[np.arange(num_rows),
                                                                               lengths - 1] != sep_id))),
        "segment_ids not 0 for [CLS] A [SEP], 1 for B [SEP]": int(np.sum(np.any(segments != segment_expected,
                                                                                axis=1))),
        "weights not 1...1 0...0": int(np.sum(np.any(weights != slots, axis=1))),
        "positions not increasing": int(np.sum(np.any((np.diff(positions, axis=1) <= 0) & slots[:, 1:], axis=1))),
        "position outside the tokens": int(np.sum(np.any(slots & ((positions < 1) | (positions >= lengths[:, None])),
                                                         axis=1))),
        "[CLS] or [SEP] predicted": int(np.sum(np.any(slots & ((labels == cls_id) | (labels == sep_id)), axis=1))),
        "padding predictions not 0": int(np.sum(np.any(~slots & ((positions != 0) | (labels != 0)), axis=1))),
    }
    if WORD_STARTS_FEATURE in batch:
        problems["word_starts not 1 at each segment's start, 0 on [CLS], [SEP], padding"] = _word_start_problems(
            batch[WORD_STARTS_FEATURE], real, first_sep, lengths)
    return problems


def _word_start_problems(word_starts, real, first_sep, lengths):
    """Records whose word starts (records/word_starts.py) break their rule; a record whose word starts are all 0
    (one written without them, read beside others) has none to check."""
    col = np.arange(word_starts.shape[1])[None, :]
    special = ~real | (col == 0) | (col == first_sep[:, None]) | (col == lengths[:, None] - 1)
    segment_start = real & ((col == 1) | (col == first_sep[:, None] + 1)) & ~special
    broken = (special & (word_starts != 0)) | (segment_start & (word_starts != 1)) | (word_starts > 1)
    return int(np.sum(np.any(broken, axis=1) & np.any(word_starts != 0, axis=1)))

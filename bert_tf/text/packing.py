"""`[CLS] A [SEP] B [SEP]`: how one or two token segments become the encoder's three id arrays, and how a pair
that is too long is cut. The one owner of these rules, in a numpy form (create_pretraining_data, fine-tuning
features) and an in-graph form of core TensorFlow ops (the preprocessing SavedModel), tested against each
other.

The rules, as the original's create_pretraining_data and run_classifier:
- `input_word_ids`: [CLS], segment A, [SEP], then for a pair segment B and [SEP]; padded with 0 ([PAD]) to the
  sequence length.
- `input_type_ids`: 0 for [CLS] A [SEP], 1 for B [SEP], 0 on padding. `input_mask`: 1 on tokens, 0 on padding.
- Too long a pair: the original `truncate_seq_pair` removes one token at a time from the longer segment (from B
  when both are as long), so A keeps min(len_a, max(ceil(budget / 2), budget - len_b)) tokens and B the rest
  of the budget (`pair_keep_lengths`). Pre-training removes each token from the front or the back at random;
  fine-tuning and serving from the back.

Core ops only in the in-graph form: TF Serving's tensorflow-text lacks `RoundRobinTrim`, so the preprocessing
SavedModel cannot use tensorflow-text's trimmer and packer.
"""

import sys

import numpy as np


def pair_keep_lengths(len_a, len_b, budget):
    """How many tokens A and B keep when at most `budget` fit (the original truncate_seq_pair's counts).

    Works on ints, numpy arrays and tensors alike (elementwise).

    Example:
    >>> pair_keep_lengths(10, 10, 15), pair_keep_lengths(3, 30, 15), pair_keep_lengths(4, 5, 15)
    ((8, 7), (3, 12), (4, 5))
    """
    if isinstance(len_a, int) and isinstance(len_b, int):  # the builtins: the offline pair builder asks per pair
        minimum, maximum = min, max
    elif _is_tensor(len_a) or _is_tensor(len_b):
        tf = sys.modules["tensorflow"]
        minimum, maximum, budget = tf.minimum, tf.maximum, tf.cast(budget, len_a.dtype)
    else:
        minimum, maximum = np.minimum, np.maximum
    keep_a = minimum(len_a, maximum((budget + 1) // 2, budget - len_b))
    return keep_a, minimum(len_b, budget - keep_a)


def _is_tensor(value):
    """Whether `value` is a TensorFlow tensor, without importing TensorFlow (offline data creation needs none)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(value, tf.Tensor)


def _ranges(starts, lengths):
    """The concatenation of range(start, start + length) for each pair, without a Python loop."""
    ends = np.cumsum(lengths)
    return np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - lengths - starts, lengths)


def pack_spans(tokens, a_start, a_stop, seq_length, cls_id, sep_id, b_start=None, b_stop=None):
    """numpy: `[CLS] tokens[a_start:a_stop] [SEP] (tokens[b_start:b_stop] [SEP])` for each row of the span arrays
    [N], padded to `seq_length` -> (input_word_ids, input_mask, input_type_ids) int32 [N, seq_length]. Padding is
    0 ([PAD]), as the records' and `pack_spans_in_graph`'s.

    The spans must already fit (`pair_keep_lengths`); b_start None packs single segments.

    Example:
    >>> tokens = np.array([7, 8, 9, 5, 6])
    >>> ids, mask, types = pack_spans(tokens, np.array([0]), np.array([3]), 9, cls_id=1, sep_id=2,
    ...                               b_start=np.array([3]), b_stop=np.array([5]))
    >>> ids.tolist(), types.tolist()
    ([[1, 7, 8, 9, 2, 5, 6, 2, 0]], [[0, 0, 0, 0, 0, 1, 1, 1, 0]])
    """
    tokens = np.asarray(tokens)
    a_start, a_stop = np.asarray(a_start, np.int64), np.asarray(a_stop, np.int64)
    len_a = a_stop - a_start
    pair = b_start is not None
    len_b = np.asarray(b_stop, np.int64) - np.asarray(b_start, np.int64) if pair else np.zeros_like(len_a)
    lengths = len_a + 2 + (len_b + 1 if pair else 0)
    if len(lengths) and lengths.max() > seq_length:
        raise ValueError(f"A packed sequence of {int(lengths.max())} tokens does not fit seq_length={seq_length}: "
                         f"cut the segments first (pair_keep_lengths).")
    rows = np.arange(len(len_a))
    ids = np.zeros((len(len_a), seq_length), np.int32)
    # A fills columns 1 .. len_a, B columns len_a + 2 .. len_a + len_b + 1.
    ids[np.repeat(rows, len_a), _ranges(np.ones_like(len_a), len_a)] = tokens[_ranges(a_start, len_a)]
    ids[:, 0] = cls_id
    ids[rows, len_a + 1] = sep_id
    if pair:
        ids[np.repeat(rows, len_b), _ranges(len_a + 2, len_b)] = tokens[_ranges(np.asarray(b_start), len_b)]
        ids[rows, lengths - 1] = sep_id
    col = np.arange(seq_length)[None, :]
    input_mask = (col < lengths[:, None]).astype(np.int32)
    type_ids = ((col >= (len_a + 2)[:, None]) & (input_mask > 0)).astype(np.int32)
    return ids, input_mask, type_ids


def pack_spans_in_graph(tokens, a_start, a_stop, seq_length, cls_id, sep_id, b_start=None, b_stop=None):
    """The same packing with core TensorFlow ops: spans int32 [N] into the flat `tokens` -> (input_word_ids,
    input_mask, input_type_ids) int32 [N, seq_length]. Padding is 0, as the records'.

    Example:
    >>> import tensorflow as tf
    >>> ids, mask, types = pack_spans_in_graph(tf.constant([7, 8, 9, 5, 6]), tf.constant([0]), tf.constant([3]),
    ...                                        9, 1, 2, b_start=tf.constant([3]), b_stop=tf.constant([5]))
    >>> ids.numpy().tolist()
    [[1, 7, 8, 9, 2, 5, 6, 2, 0]]
    """
    import tensorflow as tf

    a_start = tf.cast(a_start, tf.int32)[:, tf.newaxis]
    a = tf.cast(a_stop, tf.int32)[:, tf.newaxis] - a_start
    pair = b_start is not None
    if pair:
        b_start = tf.cast(b_start, tf.int32)[:, tf.newaxis]
        b = tf.cast(b_stop, tf.int32)[:, tf.newaxis] - b_start
    else:
        b_start, b = tf.zeros_like(a), tf.zeros_like(a) - 1  # no B and no second [SEP]
    p = tf.range(seq_length)[tf.newaxis, :]
    in_a = (p >= 1) & (p <= a)
    in_b = (p >= a + 2) & (p <= a + b + 1)
    source = tf.where(in_a, a_start + p - 1, tf.where(in_b, b_start + p - a - 2, 0))
    # A trailing 0 keeps the gather in range where no text token is read (e.g. every text empty).
    taken = tf.gather(tf.concat([tf.cast(tokens, tf.int32), [0]], 0), source)
    is_sep = tf.equal(p, a + 1) | tf.equal(p, a + b + 2)
    ids = tf.where(in_a | in_b, taken, tf.where(is_sep, sep_id, tf.where(tf.equal(p, 0), cls_id, 0)))
    input_mask = tf.cast(p < a + b + 3, tf.int32)
    type_ids = tf.cast((p >= a + 2) & (p < a + b + 3), tf.int32)
    return ids, input_mask, type_ids

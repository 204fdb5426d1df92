"""The optional `word_starts` record feature: where each whole-word masking group of a record starts.

Written only when `bert-create-pretraining-data` is given a word segmenter (`--word_segmenter`,
`text/word_segmenter.py`): int64 [max_seq_length], 1 on the first token of each masking group, 0 on the other
tokens of a group, on [CLS], [SEP] and on padding (docs/record_format.md). The first token of each segment always
starts a group: truncation may cut a segment's front inside a word, and no group runs across a [SEP]. Masking that
reads it (static and dynamic) groups tokens by it instead of by "##" pieces; a record without it, or whose values
are all 0, is grouped by "##" pieces, so records with and without it may be mixed. Records written without a
segmenter are byte for byte those of before it existed.
"""

import numpy as np

from bert_tf.text.packing import pack_spans

WORD_STARTS_FEATURE = "word_starts"


def instance_word_starts(token_starts, spans, seq_length):
    """The word starts of `[CLS] A [SEP] B [SEP]` instances, from those of their tokens.

    Args:
        token_starts: uint8 [tokens], 1 where a group starts among a shard's flat tokens.
        spans: int [N, >= 4], each row (a_start, a_stop, b_start, b_stop) into the flat tokens.
        seq_length: the records' max_seq_length.

    Returns int32 [N, seq_length].

    Example:
    >>> starts = instance_word_starts(np.array([1, 0, 0, 1, 0]), np.array([[1, 3, 3, 5]]), 8)
    >>> starts.tolist()  # A starts mid-word at token 1: its first token starts a group all the same
    [[0, 1, 0, 0, 1, 0, 0, 0]]
    """
    spans = np.asarray(spans)
    a_start, a_stop, b_start, b_stop = spans[:, :4].T
    starts, _, _ = pack_spans(np.asarray(token_starts), a_start, a_stop, seq_length, 0, 0, b_start=b_start,
                              b_stop=b_stop)
    rows = np.arange(len(spans))
    starts[rows[a_stop > a_start], 1] = 1
    has_b = b_stop > b_start
    starts[rows[has_b], (a_stop - a_start + 2)[has_b]] = 1
    return starts

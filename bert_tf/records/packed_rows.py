"""Packed rows: several training instances in one record, each kept whole (docs/record_format.md, "Packed rows").

The original fills a record with one instance, so a document's short last chunk leaves the rest of the row as
padding, and every matmul of the step runs over it. A packed row holds up to `max_instances_per_row` instances
back to back; each keeps its own [CLS]/[SEP], segment ids, masked positions (the original's cap per instance),
next-sentence label (and word starts, when written: records/word_starts.py), and says which tokens are its own
(`instance_ids`) and where each token sits in it (`position_ids`, restarting at 0), so the model can keep
attention inside each instance (Krell et al., arXiv 2107.02027). The name "row" keeps this apart from
`text/packing.py`, which assembles [CLS] A [SEP] B [SEP].

This module owns the layout of a packed row in numpy: `assemble_rows` (instances + their rows -> row arrays) and
`split_rows` (row arrays -> the instances they hold, in the unpacked format), which bert-inspect-data, the record
checker and the tests read packed records through. Which instances share a row is decided elsewhere
(`instances/best_fit_rows.py`).
"""

import dataclasses
import math

import numpy as np

from bert_tf.errors import InputError
from bert_tf.records.word_starts import WORD_STARTS_FEATURE

FORMAT_VERSION = 1
FORMAT_FEATURE = "packed_row_format"
DEFAULT_MAX_INSTANCES_PER_ROW = 3  # Krell et al. pack at most 3 sequences at 512 tokens


def default_predictions_per_row(max_seq_length, max_predictions_per_seq, max_instances_per_row, masked_lm_prob):
    """Prediction slots of a row that always hold its instances' predictions: each instance predicts at most
    min(P, max(1, round(length * p))) <= length * p + 1 tokens, and the lengths of a row sum to at most T, so
    ceil(T * p) + K slots suffice (and K * P always do).

    Example:
    >>> default_predictions_per_row(512, 80, 3, 0.15), default_predictions_per_row(128, 20, 3, 0.15)
    (80, 23)
    """
    budget = math.ceil(max_seq_length * masked_lm_prob - 1e-9) + max_instances_per_row
    return min(max_instances_per_row * max_predictions_per_seq, budget)


@dataclasses.dataclass(frozen=True)
class RowLayout:
    """The shape of a packed row: T tokens, at most K instances, P_row prediction slots shared by its instances.

    Example:
    >>> layout = RowLayout(max_seq_length=128, max_instances_per_row=3, max_predictions_per_row=23)
    >>> layout.lengths()["next_sentence_labels"], layout.lengths()["masked_lm_ids"]
    (3, 23)
    >>> RowLayout(128, 1, 20)
    Traceback (most recent call last):
    ...
    bert_tf.errors.InputError: max_instances_per_row=1 packs nothing: use at least 2 (Krell et al. use 3), or
    write unpacked records.
    """

    max_seq_length: int
    max_instances_per_row: int
    max_predictions_per_row: int

    def __post_init__(self):
        if not isinstance(self.max_instances_per_row, int) or self.max_instances_per_row < 2:
            raise InputError(f"max_instances_per_row={self.max_instances_per_row} packs nothing: use at least 2 "
                             f"(Krell et al. use 3), or write unpacked records.")
        if not 1 <= self.max_predictions_per_row <= self.max_seq_length:
            raise InputError(f"max_predictions_per_row={self.max_predictions_per_row} must lie in [1, "
                             f"max_seq_length={self.max_seq_length}].")

    @classmethod
    def for_instances(cls, max_seq_length, max_predictions_per_seq, masked_lm_prob,
                      max_instances_per_row=DEFAULT_MAX_INSTANCES_PER_ROW, max_predictions_per_row=None):
        """The layout for instances of these lengths and masking rate (slots: `default_predictions_per_row`)."""
        if max_predictions_per_row is None:
            max_predictions_per_row = default_predictions_per_row(max_seq_length, max_predictions_per_seq,
                                                                  max_instances_per_row, masked_lm_prob)
        return cls(max_seq_length, max_instances_per_row, max_predictions_per_row)

    def lengths(self):
        """v1 feature name -> its length in a packed row."""
        return {name: {"seq": self.max_seq_length, "pred": self.max_predictions_per_row,
                       "inst": self.max_instances_per_row, "one": 1}[kind]
                for name, _, kind in PACKED_FEATURES}


# (v1 record name, is float, length kind): "inst" features have one value per instance slot of the row.
PACKED_FEATURES = (
    ("input_ids", False, "seq"),
    ("input_mask", False, "seq"),
    ("segment_ids", False, "seq"),
    ("position_ids", False, "seq"),       # the token's position in its instance; 0 on padding
    ("instance_ids", False, "seq"),       # 1 for the row's first instance, 2 for the second, ...; 0 on padding
    ("masked_lm_positions", False, "pred"),  # row positions, ascending; the instances' predictions in row order
    ("masked_lm_ids", False, "pred"),
    ("masked_lm_weights", True, "pred"),
    ("next_sentence_positions", False, "inst"),  # the row position of each instance's [CLS]; 0 for an empty slot
    ("next_sentence_labels", False, "inst"),
    ("next_sentence_weights", True, "inst"),     # 1.0 for an instance, 0.0 for an empty slot
    (FORMAT_FEATURE, False, "one"),
)


def assemble_rows(instances, row_of, start_of, slot_of, prediction_start_of, num_rows, layout):
    """Instances (unpacked record arrays keyed by v1 name, N rows) -> packed row arrays [num_rows, ...].

    Instance n goes to row `row_of[n]`, its tokens from `start_of[n]`, its predictions from slot
    `prediction_start_of[n]`, its label to instance slot `slot_of[n]` (the slots of a row in token order).

    Example:
    >>> one = {"input_ids": np.array([[2, 5, 3, 6, 3, 0]]), "input_mask": np.array([[1, 1, 1, 1, 1, 0]]),
    ...        "segment_ids": np.array([[0, 0, 0, 1, 1, 0]]), "masked_lm_positions": np.array([[1, 0]]),
    ...        "masked_lm_ids": np.array([[7, 0]]), "masked_lm_weights": np.array([[1.0, 0.0]]),
    ...        "next_sentence_labels": np.array([[1]])}
    >>> two = {k: np.concatenate([v, v]) for k, v in one.items()}
    >>> rows = assemble_rows(two, [0, 0], [0, 5], [0, 1], [0, 1], 1, RowLayout(10, 2, 3))
    >>> rows["instance_ids"].tolist(), rows["masked_lm_positions"].tolist()
    ([[1, 1, 1, 1, 1, 2, 2, 2, 2, 2]], [[1, 6, 0]])
    """
    row_of, start_of, slot_of, prediction_start_of = (np.asarray(a, np.int64) for a in (row_of, start_of, slot_of,
                                                                                        prediction_start_of))
    lengths = np.asarray(instances["input_mask"]).sum(axis=1).astype(np.int64)
    counts = np.asarray(instances["masked_lm_weights"]).sum(axis=1).astype(np.int64)
    if np.any(start_of + lengths > layout.max_seq_length) or np.any(slot_of >= layout.max_instances_per_row) or \
            np.any(prediction_start_of + counts > layout.max_predictions_per_row):
        raise ValueError("An instance does not fit its row: the assignment breaks the row layout.")
    rows = {name: np.zeros((num_rows, length), np.float32 if name.endswith("weights") else np.int64)
            for name, length in layout.lengths().items()}
    token_features = ("input_ids", "input_mask", "segment_ids") + _word_starts_in(instances)
    for name in _word_starts_in(instances):
        rows[name] = np.zeros((num_rows, layout.max_seq_length), np.int64)
    n, t = np.nonzero(np.arange(layout.max_seq_length)[None, :] < lengths[:, None])
    row, column = row_of[n], start_of[n] + t
    for name in token_features:
        rows[name][row, column] = np.asarray(instances[name])[n, t]
    rows["position_ids"][row, column] = t
    rows["instance_ids"][row, column] = slot_of[n] + 1
    n, q = np.nonzero(np.arange(np.asarray(instances["masked_lm_weights"]).shape[1])[None, :] < counts[:, None])
    row, slot = row_of[n], prediction_start_of[n] + q
    rows["masked_lm_positions"][row, slot] = np.asarray(instances["masked_lm_positions"])[n, q] + start_of[n]
    rows["masked_lm_ids"][row, slot] = np.asarray(instances["masked_lm_ids"])[n, q]
    rows["masked_lm_weights"][row, slot] = 1.0
    rows["next_sentence_positions"][row_of, slot_of] = start_of
    rows["next_sentence_labels"][row_of, slot_of] = np.asarray(instances["next_sentence_labels"]).reshape(-1)
    rows["next_sentence_weights"][row_of, slot_of] = 1.0
    rows[FORMAT_FEATURE][:] = FORMAT_VERSION
    return rows


def _word_starts_in(features):
    """(WORD_STARTS_FEATURE,) when `features` hold the optional word starts (a token feature of rows and
    instances alike), else ()."""
    return (WORD_STARTS_FEATURE,) if WORD_STARTS_FEATURE in features else ()


def split_rows(rows, max_predictions_per_seq=None):
    """Packed row arrays (v1 names) -> (the instances they hold as unpacked record arrays, the row of each).

    Instances come out row by row, in token order; their prediction features have `max_predictions_per_seq`
    slots (default: the row's). Raises an InputError when a row's predictions of an instance do not fit.

    Example:
    >>> instances, row_of = split_rows(rows)  # doctest: +SKIP
    >>> instances["input_ids"].shape  # doctest: +SKIP
    (5, 128)
    """
    ids = np.asarray(rows["input_ids"])
    num_rows, seq_len = ids.shape
    weights = np.asarray(rows["next_sentence_weights"]) > 0
    row_of, slot_of = np.nonzero(weights)
    starts = np.asarray(rows["next_sentence_positions"])[row_of, slot_of]
    instance_ids = np.asarray(rows["instance_ids"])
    lengths = np.sum(instance_ids[row_of] == (slot_of + 1)[:, None], axis=1)
    t = np.arange(seq_len)[None, :]
    real = t < lengths[:, None]
    source = np.where(real, starts[:, None] + t, 0)
    out = {name: np.where(real, np.asarray(rows[name])[row_of[:, None], source], 0)
           for name in ("input_ids", "input_mask", "segment_ids") + _word_starts_in(rows)}
    out["next_sentence_labels"] = np.asarray(rows["next_sentence_labels"])[row_of, slot_of][:, None]

    positions = np.asarray(rows["masked_lm_positions"])
    real_prediction = np.asarray(rows["masked_lm_weights"]) > 0
    slot_of_prediction = np.where(real_prediction, np.take_along_axis(instance_ids, positions, axis=1) - 1, -1)
    width = positions.shape[1] if max_predictions_per_seq is None else max_predictions_per_seq
    out["masked_lm_positions"] = np.zeros((len(row_of), width), np.int64)
    out["masked_lm_ids"] = np.zeros((len(row_of), width), np.int64)
    out["masked_lm_weights"] = np.zeros((len(row_of), width), np.float32)
    for n, (row, slot) in enumerate(zip(row_of, slot_of)):
        mine = np.nonzero(slot_of_prediction[row] == slot)[0]
        if len(mine) > width:
            raise InputError(f"Row {row} holds {len(mine)} predictions of one instance, more than "
                             f"max_predictions_per_seq={width}: pass the cap the records were written with.")
        out["masked_lm_positions"][n, :len(mine)] = positions[row, mine] - starts[n]
        out["masked_lm_ids"][n, :len(mine)] = np.asarray(rows["masked_lm_ids"])[row, mine]
        out["masked_lm_weights"][n, :len(mine)] = 1.0
    return out, row_of


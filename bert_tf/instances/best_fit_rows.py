"""Which instances share a packed row: best-fit decreasing, the rule of Krell et al.'s shortest-pack-first
histogram packing (arXiv 2107.02027), with at most K instances and P_row predictions per row.

The instances are taken longest first (ties in their given order); each goes to the open row with the least room
left that still takes its tokens, its predictions and one more instance (ties: the row opened first), or opens a
new row. Within a row the instances lie in the order they came. Every instance is placed whole: none is dropped
or cut. The same rule runs inside tf.data on windows of records (`inputs/rows_in_tf_data.py`), and the two agree row
for row (tests/test_row_packing.py).
"""

import bisect
import dataclasses

import numpy as np

from bert_tf.records.packed_rows import assemble_rows


@dataclasses.dataclass
class RowAssignment:
    """Where each instance goes: its row, its slot in the row, its first token and its first prediction slot.

    Example:
    >>> from bert_tf.records.packed_rows import RowLayout
    >>> assignment = assign_rows([100, 60, 30, 20], [15, 9, 5, 3], RowLayout(128, 3, 23))
    >>> assignment.num_rows, assignment.row_of.tolist(), assignment.start_of.tolist()
    (2, [0, 1, 1, 0], [0, 0, 60, 100])
    """

    row_of: np.ndarray
    slot_of: np.ndarray
    start_of: np.ndarray
    prediction_start_of: np.ndarray
    num_rows: int


def assign_rows(lengths, prediction_counts, layout):
    """Best-fit decreasing of instances with `lengths` tokens and `prediction_counts` predictions into rows of
    `layout` (a `RowLayout`) -> `RowAssignment`."""
    lengths = np.asarray(lengths, np.int64)
    prediction_counts = np.asarray(prediction_counts, np.int64)
    if np.any(lengths > layout.max_seq_length) or np.any(prediction_counts > layout.max_predictions_per_row):
        raise ValueError("An instance is longer than a row: it cannot be packed whole.")
    count = len(lengths)
    row_of, slot_of, start_of, prediction_start_of = (np.zeros(count, np.int64) for _ in range(4))
    used_tokens, used_predictions, used_slots = [], [], []
    open_rows = []  # (room left in tokens, row) of the rows that can take another instance, sorted
    for n in np.argsort(-lengths, kind="stable").tolist():
        length, predictions = int(lengths[n]), int(prediction_counts[n])
        index = bisect.bisect_left(open_rows, (length, -1))
        while index < len(open_rows) and (used_predictions[open_rows[index][1]] + predictions >
                                          layout.max_predictions_per_row):
            index += 1
        if index < len(open_rows):
            row = open_rows.pop(index)[1]
        else:
            row = len(used_tokens)
            used_tokens.append(0)
            used_predictions.append(0)
            used_slots.append(0)
        row_of[n], slot_of[n] = row, used_slots[row]
        start_of[n], prediction_start_of[n] = used_tokens[row], used_predictions[row]
        used_tokens[row] += length
        used_predictions[row] += predictions
        used_slots[row] += 1
        if used_slots[row] < layout.max_instances_per_row:
            bisect.insort(open_rows, (layout.max_seq_length - used_tokens[row], row))
    return RowAssignment(row_of, slot_of, start_of, prediction_start_of, len(used_tokens))


def pack_instances(instances, layout):
    """Unpacked instance arrays (v1 names) -> packed row arrays, rows in the order they were opened.

    Example:
    >>> rows = pack_instances(instances, RowLayout(128, 3, 23))  # doctest: +SKIP
    >>> rows["instance_ids"].max(axis=1)  # instances per row  # doctest: +SKIP
    """
    assignment = assign_rows(np.asarray(instances["input_mask"]).sum(axis=1),
                             np.asarray(instances["masked_lm_weights"]).sum(axis=1).astype(np.int64), layout)
    return assemble_rows(instances, assignment.row_of, assignment.start_of, assignment.slot_of,
                         assignment.prediction_start_of, assignment.num_rows, layout)


"""[CLS] A [SEP] B [SEP]: the numpy and in-graph forms of the one packing rule give the same arrays, and the
truncation counts are the original truncate_seq_pair's."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.text.packing import pack_spans, pack_spans_in_graph, pair_keep_lengths
from helpers import original_truncation

CLS, SEP = 1, 2


def test_keep_lengths_are_the_original_loops_for_ints_arrays_and_tensors():
    cases = [(a, b, budget) for a in range(0, 14) for b in range(0, 14) for budget in (1, 2, 5, 8, 13)]
    want = [original_truncation(*case) for case in cases]
    assert [pair_keep_lengths(*case) for case in cases] == want
    a, b, budget = (np.array(column) for column in zip(*cases))
    got = [pair_keep_lengths(a[budget == k], b[budget == k], k) for k in (1, 2, 5, 8, 13)]
    assert sorted(zip(np.concatenate([g[0] for g in got]).tolist(), np.concatenate([g[1] for g in got]).tolist())) \
        == sorted(w for case, w in zip(cases, want) if case[2] in (1, 2, 5, 8, 13))
    keep_a, keep_b = pair_keep_lengths(tf.constant(a[budget == 5]), tf.constant(b[budget == 5]), 5)
    assert list(zip(keep_a.numpy().tolist(), keep_b.numpy().tolist())) == [
        w for case, w in zip(cases, want) if case[2] == 5]


def random_spans(rng, count, total, seq_length):
    len_a = rng.integers(0, (seq_length - 3) // 2 + 1, count)
    len_b = rng.integers(0, (seq_length - 3) // 2 + 1, count)
    a_start = rng.integers(0, total - len_a)
    b_start = rng.integers(0, total - len_b)
    return a_start, a_start + len_a, b_start, b_start + len_b


@pytest.mark.parametrize("pair", [True, False])
def test_numpy_and_in_graph_packing_agree(pair):
    rng = np.random.default_rng(3)
    tokens = rng.integers(5, 100, 500).astype(np.int32)
    a_start, a_stop, b_start, b_stop = random_spans(rng, 64, len(tokens), 24)
    spans = {"b_start": b_start, "b_stop": b_stop} if pair else {}
    ids, mask, types = pack_spans(tokens, a_start, a_stop, 24, CLS, SEP, **spans)
    graph = pack_spans_in_graph(tf.constant(tokens), tf.constant(a_start), tf.constant(a_stop), 24, CLS, SEP,
                                **{k: tf.constant(v) for k, v in spans.items()})
    assert [g.numpy().tolist() for g in graph] == [ids.tolist(), mask.tolist(), types.tolist()]
    # Spot-check one row against the rule written out.
    row = 7
    a = tokens[a_start[row]:a_stop[row]].tolist()
    b = tokens[b_start[row]:b_stop[row]].tolist() if pair else None
    expected = [CLS] + a + [SEP] + (b + [SEP] if pair else [])
    assert ids[row].tolist() == expected + [0] * (24 - len(expected))
    assert types[row].tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1 if pair else 0) + [0] * (24 - len(expected))
    assert mask[row].sum() == len(expected)


def test_a_pair_that_does_not_fit_is_refused():
    with pytest.raises(ValueError, match="does not fit seq_length=5"):
        pack_spans(np.arange(10), np.array([0]), np.array([3]), 5, CLS, SEP, b_start=np.array([3]),
                   b_stop=np.array([5]))

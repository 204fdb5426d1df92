"""The original masking rules: the per-sequence reference, and the numpy batch version equal to it."""

import numpy as np
import pytest

from bert_tf.instances.masking import MaskDraws, MaskingRules, StaticMasker, num_to_predict

PAD, CLS, SEP, MASK = 0, 1, 2, 3
VOCAB = 50
# Ids 30..49 are "##" pieces.
IS_SUBWORD = np.arange(VOCAB) >= 30


def rules(whole_word=False, prob=0.15, cap=20):
    return StaticMasker(MaskingRules(prob, cap, whole_word), VOCAB, MASK, (PAD, CLS, SEP), IS_SUBWORD)


def random_batch(rng, num_rows, seq_len):
    """Padded [CLS] A [SEP] B [SEP] rows of random word and piece ids."""
    lengths = rng.integers(5, seq_len + 1, num_rows)
    ids = np.where(rng.random((num_rows, seq_len)) < 0.3, rng.integers(30, VOCAB, (num_rows, seq_len)),
                   rng.integers(4, 30, (num_rows, seq_len)))
    for i, length in enumerate(lengths):
        ids[i, length:] = PAD
        ids[i, 0] = CLS
        ids[i, rng.integers(2, length - 2)] = SEP
        ids[i, length - 1] = SEP
    return ids, lengths


def test_num_to_predict_rounds_half_to_even_like_the_original():
    # int(round(n * p)) of the original, e.g. 10 * 0.25 = 2.5 -> 2, 14 * 0.25 = 3.5 -> 4; at least 1; capped.
    assert [num_to_predict(n, 0.25, 20) for n in (2, 6, 10, 14)] == [1, 2, 2, 4]
    assert num_to_predict(128, 0.15, 20) == 19 and num_to_predict(512, 0.15, 76) == 76
    assert num_to_predict(5, 0.15, 20) == 1


def test_batch_budget_is_pythons_round_for_every_length():
    lengths = np.arange(5, 513)
    for prob in (0.15, 0.1, 0.25, 0.2):
        budget = np.minimum(80, np.maximum(1, np.round(lengths * prob).astype(np.int64)))
        assert budget.tolist() == [num_to_predict(n, prob, 80) for n in lengths.tolist()]


def test_80_10_10_rule():
    assert [MaskingRules().masked_token(7, u, 9, MASK) for u in (0.0, 0.79, 0.8, 0.89, 0.9, 0.999)] == [
        MASK, MASK, 7, 7, 9, 9]


def test_groups_join_pieces_to_the_previous_candidate_even_across_sep():
    ids = [CLS, 5, 31, 6, SEP, 32, 7, 33, 34, SEP]
    assert rules(whole_word=True).candidate_groups(ids) == [[1, 2], [3, 5], [6, 7, 8]]
    assert rules().candidate_groups(ids) == [[1], [2], [3], [5], [6], [7], [8]]
    # A piece with no candidate before it starts its own group.
    assert rules(whole_word=True).candidate_groups([CLS, 31, 5, SEP]) == [[1], [2]]


def test_reference_hand_computed_whole_word_skip():
    # 20 tokens -> budget round(20 * 0.15) = 3. Groups ordered by key: [5,6,7] (3 pieces) first, then [1] ...
    ids = [CLS, 4, 5, SEP, 8, 31, 32, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, SEP]
    keys = np.linspace(0.9, 0.1, 20)
    keys[4] = 0.01   # the group [4, 5, 6] comes first and fills the budget of 3
    keys[1] = 0.02
    draws = MaskDraws(keys=keys, u=np.full(20, 0.5, np.float32), random_ids=np.full(20, 40, np.int32))
    output, positions, labels = rules(whole_word=True).mask_sequence(ids, draws)
    assert positions == [4, 5, 6] and labels == [8, 31, 32]
    assert output[4:7] == [MASK] * 3 and output[1] == 4
    # Budget 4: after the 3-piece word, [1] fits (4), then nothing more.
    draws.u[:] = 0.95
    output, positions, labels = rules(whole_word=True, prob=0.2).mask_sequence(ids, draws)
    assert positions == [1, 4, 5, 6] and output[1] == 40 and output[4:7] == [40] * 3
    # A 3-piece word that does not fit the remaining budget is skipped, later single words are taken.
    keys[1], keys[4] = 0.01, 0.02
    output, positions, _ = rules(whole_word=True, prob=0.1).mask_sequence(ids, draws)  # budget 2
    assert positions == [1, 18]  # [1], skip [4, 5, 6], then the next key in order: position 18 (key 0.14)


@pytest.mark.parametrize("whole_word", [False, True])
@pytest.mark.parametrize("prob,cap", [(0.15, 20), (0.5, 40), (0.15, 3)])
def test_batch_equals_reference_for_the_same_draws(whole_word, prob, cap):
    rng = np.random.default_rng(hash((whole_word, prob, cap)) % 2**32)
    ids, lengths = random_batch(rng, 1500, 48)
    masking = rules(whole_word, prob, cap)
    draws = MaskDraws.draw(rng, ids.shape, VOCAB)
    output, positions, labels, weights, counts = masking.mask_batch(ids, lengths, draws)
    assert output.shape == ids.shape and positions.shape == (1500, cap) and weights.dtype == np.float32
    for i in range(len(ids)):
        want_output, want_positions, want_labels = masking.mask_sequence(ids[i, :lengths[i]], draws.row(i))
        n = len(want_positions)
        assert counts[i] == n
        assert output[i, :lengths[i]].tolist() == want_output and (output[i, lengths[i]:] == PAD).all()
        assert positions[i, :n].tolist() == want_positions and labels[i, :n].tolist() == want_labels
        assert not positions[i, n:].any() and not labels[i, n:].any()
        assert weights[i].tolist() == [1.0] * n + [0.0] * (cap - n)
    if not whole_word:
        budget = [min(cap, max(1, round(n * prob))) for n in lengths.tolist()]
        assert counts.tolist() == budget  # enough candidates everywhere: exactly num_to_predict


def test_batch_shares_on_many_rows():
    rng = np.random.default_rng(0)
    ids, lengths = random_batch(rng, 4000, 64)
    _, positions, labels, weights, counts = rules().mask_batch(ids, lengths, MaskDraws.draw(rng, ids.shape, VOCAB))
    real = weights > 0
    assert not np.isin(labels[real], [CLS, SEP, PAD]).any()
    rows = np.nonzero(real)[0]
    # Positions are uniform over the candidates: the mean relative position is about the middle.
    relative = positions[real] / (lengths[rows] - 1)
    assert abs(relative.mean() - 0.5) < 0.01

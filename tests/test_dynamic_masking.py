"""Dynamic masking: the original rules measured on thousands of sequences, and the records pipeline that draws them
again for every batch."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.inputs.dynamic_masking import DynamicMasker
from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import MODEL_FEATURES, pretraining_dataset

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

# A vocab of 400 words and 100 "##" pieces after the specials, in the original's order of ids.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(400)] + [f"##p{i}" for i in range(100)]
PAD, CLS, SEP, MASK = 0, 2, 3, 4
FIRST_PIECE = 405
SEQ, PRED = 128, 20


def random_batch(rng, batch, seq=SEQ, pieces=False):
    """Unmasked pairs [CLS] A [SEP] B [SEP] of random lengths; with `pieces`, some words get "##" pieces."""
    ids = np.zeros((batch, seq), np.int32)
    types = np.zeros((batch, seq), np.int32)
    for row in range(batch):
        length = int(rng.integers(8, seq + 1))
        tokens = rng.integers(5, FIRST_PIECE, length)
        if pieces:
            follows = rng.random(length) < 0.3
            tokens = np.where(follows, rng.integers(FIRST_PIECE, len(VOCAB), length), tokens)
        split = int(rng.integers(2, length - 2))
        tokens[0], tokens[split], tokens[length - 1] = CLS, SEP, SEP
        tokens[1] = tokens[split + 1] = 5  # segments start with a word, never a piece
        ids[row, :length] = tokens
        types[row, split + 1:length] = 1
    return {"input_word_ids": ids, "input_mask": (ids != PAD).astype(np.int32), "input_type_ids": types,
            "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype(np.int32)}


def expected_num_to_predict(lengths, prob=0.15, cap=PRED):
    return np.minimum(cap, np.maximum(1, np.array([int(round(n * prob)) for n in lengths])))


def mask_many(masker, num_batches=16, batch=256, pieces=False, seed=0):
    rng = np.random.default_rng(seed)
    inputs, outputs = [], []
    for index in range(num_batches):
        features = random_batch(rng, batch, pieces=pieces)
        inputs.append(features)
        outputs.append({k: v.numpy() for k, v in masker.mask_batch(
            features, PRED, tf.constant([seed, index], tf.int64)).items()})
    return ({k: np.concatenate([x[k] for x in inputs]) for k in inputs[0]},
            {k: np.concatenate([x[k] for x in outputs]) for k in outputs[0]})


def check_structure(inputs, out):
    """What every masked batch must satisfy, row by row; returns the number of predictions per row."""
    ids, masked = inputs["input_word_ids"], out["input_word_ids"]
    positions, labels, weights = out["masked_lm_positions"], out["masked_lm_ids"], out["masked_lm_weights"]
    counts = weights.sum(axis=1).astype(int)
    rows = np.arange(len(ids))[:, None]
    for name in ("input_mask", "input_type_ids", "next_sentence_labels"):
        np.testing.assert_array_equal(out[name], inputs[name])
    # Weights are ones then zeros; real positions strictly increasing (sorted, distinct); padding entries 0.
    assert np.all(weights == (np.arange(PRED)[None, :] < counts[:, None]))
    real = weights > 0
    assert np.all(np.diff(np.where(real, positions, 10 ** 6), axis=1)[real[:, 1:]] > 0)
    assert np.all(positions[~real] == 0) and np.all(labels[~real] == 0)
    # Labels are the original tokens; no special token or padding is ever a label.
    np.testing.assert_array_equal(labels[real], ids[rows, positions][real])
    assert not np.isin(labels[real], [PAD, CLS, SEP]).any()
    # Only the predicted positions change.
    changed = np.zeros_like(ids, bool)
    changed[rows.repeat(PRED, 1)[real], positions[real]] = True
    np.testing.assert_array_equal(masked[~changed], ids[~changed])
    return counts


def test_rates_and_structure_on_thousands_of_sequences():
    masker = DynamicMasker(VOCAB)
    inputs, out = mask_many(masker)
    counts = check_structure(inputs, out)
    lengths = inputs["input_mask"].sum(axis=1)
    candidates = ((inputs["input_mask"] == 1) & ~np.isin(inputs["input_word_ids"], [CLS, SEP])).sum(axis=1)
    # num_to_predict exactly as the original, row by row (there are always enough candidates here).
    assert np.all(candidates >= expected_num_to_predict(lengths))
    np.testing.assert_array_equal(counts, expected_num_to_predict(lengths))
    under_cap = lengths * 0.15 < PRED - 0.5
    assert under_cap.sum() > 1000
    rate = counts[under_cap].sum() / lengths[under_cap].sum()
    assert abs(rate - 0.15) < 0.005, rate
    # 80% [MASK], 10% kept, 10% random token from the whole vocab.
    real = out["masked_lm_weights"] > 0
    new = out["input_word_ids"][np.arange(len(counts))[:, None], out["masked_lm_positions"]][real]
    labels = out["masked_lm_ids"][real]
    masked, kept = np.mean(new == MASK), np.mean(new == labels)
    random_share = 1 - masked - kept
    assert abs(masked - 0.8) < 0.015 and abs(kept - 0.1) < 0.015 and abs(random_share - 0.1) < 0.015, \
        (masked, kept, random_share)
    random_tokens = new[(new != MASK) & (new != labels)]
    # Random tokens span the whole vocab, specials and pieces included.
    assert random_tokens.min() < 5 and random_tokens.max() >= FIRST_PIECE
    # Every candidate position is equally likely: first, middle and last word of segment A alike.
    selected = np.zeros_like(inputs["input_word_ids"], bool)
    selected[np.nonzero(real)[0], out["masked_lm_positions"][real]] = True
    rows_short = (lengths <= 40)
    per_position = selected[rows_short].mean(axis=0)[1:4]
    assert np.ptp(per_position) < 0.05, per_position


def test_short_sequences_and_few_candidates():
    masker = DynamicMasker(VOCAB)
    ids = np.zeros((3, SEQ), np.int32)
    ids[0, :4] = [CLS, 7, SEP, SEP]          # len 4: round(0.6) = 1 prediction, one candidate
    ids[1, :3] = [CLS, SEP, SEP]             # no candidate at all: nothing predicted
    ids[2, :10] = [CLS, 7, 8, 9, SEP, 10, 11, 12, 13, SEP]  # len 10: round(1.5) = 2 (half to even)
    features = {"input_word_ids": ids, "input_mask": (ids != 0).astype(np.int32),
                "input_type_ids": np.zeros_like(ids), "next_sentence_labels": np.zeros((3, 1), np.int32)}
    out = masker.mask_batch(features, PRED, tf.constant([1, 2], tf.int64))
    np.testing.assert_array_equal(out["masked_lm_weights"].numpy().sum(axis=1), [1, 0, 2])
    assert out["masked_lm_positions"].numpy()[0, 0] == 1 and out["masked_lm_ids"].numpy()[0, 0] == 7


def test_whole_word_groups_stay_intact_within_the_budget():
    masker = DynamicMasker(VOCAB, do_whole_word_mask=True)
    inputs, out = mask_many(masker, num_batches=8, pieces=True, seed=3)
    counts = check_structure(inputs, out)
    ids = inputs["input_word_ids"]
    lengths = inputs["input_mask"].sum(axis=1)
    budget = expected_num_to_predict(lengths)
    assert np.all(counts <= budget)
    assert np.mean(counts == budget) > 0.8  # a word is skipped only when it does not fit
    real = out["masked_lm_weights"] > 0
    selected = np.zeros_like(ids, bool)
    selected[np.nonzero(real)[0], out["masked_lm_positions"][real]] = True
    is_piece = ids >= FIRST_PIECE
    # A piece is selected exactly when the token before it (its word's previous token) is.
    piece_rows, piece_cols = np.nonzero(is_piece)
    np.testing.assert_array_equal(selected[piece_rows, piece_cols], selected[piece_rows, piece_cols - 1])
    assert selected[is_piece].sum() > 1000
    # Whole words: the share of predicted tokens still near 15% under the cap.
    under_cap = lengths * 0.15 < PRED - 0.5
    rate = counts[under_cap].sum() / lengths[under_cap].sum()
    assert abs(rate - 0.15) < 0.01, rate


def test_seeds_decide_the_masks():
    masker = DynamicMasker(VOCAB)
    features = random_batch(np.random.default_rng(0), 64)

    def positions(seed):
        return masker.mask_batch(features, PRED, tf.constant(seed, tf.int64))["masked_lm_positions"].numpy()

    np.testing.assert_array_equal(positions([5, 0]), positions([5, 0]))
    assert np.mean(np.any(positions([5, 0]) != positions([5, 1]), axis=1)) > 0.9
    assert np.mean(np.any(positions([5, 0]) != positions([6, 0]), axis=1)) > 0.9


def test_masker_rejects_a_vocab_without_specials_and_bad_rates():
    with pytest.raises(ValueError, match=r"lacks the special token\(s\) \['\[MASK\]'\]"):
        DynamicMasker(["[PAD]", "[CLS]", "[SEP]", "a"])
    with pytest.raises(ValueError, match="masked_lm_prob=1.5"):
        DynamicMasker(VOCAB, masked_lm_prob=1.5)


def write_examples(path, rows):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for row in rows:
            feature = {name: tf.train.Feature(float_list=tf.train.FloatList(value=value))
                       if isinstance(value[0], float) else tf.train.Feature(int64_list=tf.train.Int64List(value=value))
                       for name, value in row.items()}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return str(path)


def test_records_without_masks_get_new_masks_each_epoch(tmp_path):
    rng = np.random.default_rng(1)
    batch = random_batch(rng, 64, seq=32)
    rows = []
    for ids, types in zip(batch["input_word_ids"], batch["input_type_ids"]):
        length = int((ids != 0).sum())  # unpadded token ids and segment ids only
        rows.append({"input_ids": ids[:length].tolist(), "segment_ids": types[:length].tolist()})
    path = write_examples(tmp_path / "unmasked.tfrecord", rows)
    masker = DynamicMasker(VOCAB)

    def epochs(seed, count):
        dataset = pretraining_dataset(InputSpec(path, 32, 5, 16, seed=seed, masker=masker, shuffle_buffer=1))
        return [b for _, b in zip(range(count), dataset)]

    first = epochs(4, 8)
    assert sorted(first[0]) == sorted(MODEL_FEATURES)
    assert first[0]["input_word_ids"].shape == (16, 32) and first[0]["masked_lm_ids"].shape == (16, 5)
    # shuffle_buffer=1 keeps the file order: epoch 2 holds the same sequences with other masks.
    for a, b in zip(first[:4], first[4:]):
        np.testing.assert_array_equal(a["input_mask"].numpy(), b["input_mask"].numpy())
        assert np.mean(a["masked_lm_positions"].numpy() != b["masked_lm_positions"].numpy()) > 0.3
    for got, want in zip(epochs(4, 8), first):
        np.testing.assert_array_equal(got["input_word_ids"].numpy(), want["input_word_ids"].numpy())
    # shuffle_buffer=1: epoch 1 is the file in order; unmasking gives back the written ids, padded.
    for k, b in enumerate(first[:4]):
        restored = b["input_word_ids"].numpy().copy()
        real = b["masked_lm_weights"].numpy() > 0
        restored[np.nonzero(real)[0], b["masked_lm_positions"].numpy()[real]] = b["masked_lm_ids"].numpy()[real]
        np.testing.assert_array_equal(restored, batch["input_word_ids"][16 * k:16 * k + 16])
        np.testing.assert_array_equal(b["input_type_ids"].numpy(), batch["input_type_ids"][16 * k:16 * k + 16])
        np.testing.assert_array_equal(b["input_mask"].numpy(), batch["input_mask"][16 * k:16 * k + 16])
        assert np.all(b["next_sentence_labels"].numpy() == 0)
    # A checkpointed iterator resumes with the same masks.
    iterator = iter(pretraining_dataset(InputSpec(path, 32, 5, 16, seed=4, masker=masker, shuffle_buffer=1)))
    next(iterator)
    saved = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "it"))
    resumed = iter(pretraining_dataset(InputSpec(path, 32, 5, 16, seed=4, masker=masker, shuffle_buffer=1)))
    tf.train.Checkpoint(iterator=resumed).read(saved).assert_consumed()
    for want in first[1:8]:
        np.testing.assert_array_equal(next(resumed)["input_word_ids"].numpy(), want["input_word_ids"].numpy())


def test_static_masks_in_records_are_undone_before_new_ones_are_drawn(tmp_path):
    masker = DynamicMasker(VOCAB)
    batch = random_batch(np.random.default_rng(2), 32, seq=32)
    static = masker.mask_batch(batch, 5, tf.constant([9, 9], tf.int64))
    rows = [{"input_ids": static["input_word_ids"][i].numpy().tolist(),
             "input_mask": static["input_mask"][i].numpy().tolist(),
             "segment_ids": static["input_type_ids"][i].numpy().tolist(),
             "masked_lm_positions": static["masked_lm_positions"][i].numpy().tolist(),
             "masked_lm_ids": static["masked_lm_ids"][i].numpy().tolist(),
             "masked_lm_weights": [float(w) for w in static["masked_lm_weights"][i].numpy()],
             "next_sentence_labels": [int(static["next_sentence_labels"][i, 0])]} for i in range(32)]
    path = write_examples(tmp_path / "static.tfrecord", rows)
    out = next(iter(pretraining_dataset(InputSpec(path, 32, 5, 32, is_training=False, masker=masker, seed=1))))
    restored = out["input_word_ids"].numpy().copy()
    real = out["masked_lm_weights"].numpy() > 0
    restored[np.nonzero(real)[0], out["masked_lm_positions"].numpy()[real]] = out["masked_lm_ids"].numpy()[real]
    np.testing.assert_array_equal(restored, batch["input_word_ids"])
    np.testing.assert_array_equal(out["next_sentence_labels"].numpy(), batch["next_sentence_labels"])


def test_whole_word_selection_is_the_originals_greedy_walk_exactly():
    """Given the shuffled word order the op draws, the chosen tokens are those of the original's loop."""
    masker = DynamicMasker(VOCAB, do_whole_word_mask=True)
    features = random_batch(np.random.default_rng(8), 512, pieces=True)
    ids = features["input_word_ids"]
    # Long words make skips frequent: every 4th word gets 2-5 extra pieces.
    for row in ids[::4]:
        for start in np.nonzero((row >= 5) & (row < FIRST_PIECE))[0][::4]:
            run = min(int(np.random.default_rng(start).integers(2, 6)), int(np.sum(row[start + 1:] != 0)) - 2)
            if run > 0 and not np.isin(row[start + 1:start + 1 + run], [CLS, SEP]).any():
                row[start + 1:start + 1 + run] = FIRST_PIECE
    candidate = (ids != PAD) & ~np.isin(ids, [CLS, SEP])
    lengths = (ids != PAD).sum(axis=1)
    budget = expected_num_to_predict(lengths)
    seed = tf.constant([4, 2], tf.int64)
    selected = masker._select_whole_words(tf.constant(ids), tf.constant(candidate), tf.constant(budget, tf.int32),
                                          seed).numpy()
    keys = tf.random.stateless_uniform(ids.shape, seed).numpy()
    skips = 0
    for row in range(len(ids)):
        words = []  # the original's cand_indexes
        for i in np.nonzero(candidate[row])[0]:
            if words and ids[row, i] >= FIRST_PIECE:
                words[-1].append(i)
            else:
                words.append([i])
        expected, total = np.zeros(ids.shape[1], bool), 0
        for w in np.argsort(keys[row, :len(words)]):
            if total >= budget[row]:
                break
            if total + len(words[w]) > budget[row]:
                skips += 1
                continue
            expected[words[w]] = True
            total += len(words[w])
        np.testing.assert_array_equal(selected[row], expected, err_msg=f"row {row}")
    assert skips > 200


@pytest.mark.parametrize("whole_word", [False, True])
def test_same_masks_as_the_reference_rules_given_the_same_draws(whole_word):
    """bert_tf/instances/masking.py (the static path's rules, checked there against the original) fed with the
    random numbers this op drew gives exactly its ids, positions and labels."""
    from bert_tf.instances.masking import MaskDraws, MaskingRules, StaticMasker

    masker = DynamicMasker(VOCAB, do_whole_word_mask=whole_word)
    features = random_batch(np.random.default_rng(11), 300, pieces=whole_word)
    seed = tf.constant([7, 1], tf.int64)
    out = {k: v.numpy() for k, v in masker.mask_batch(features, PRED, seed).items()}
    # The op's draws: keys per candidate (per word with whole words), then per prediction slot a uniform for
    # [MASK] (< 0.8) / keep (< 0.9) / random, and a random id.
    select_seed, value_seed, token_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))
    ids = features["input_word_ids"]
    keys = tf.random.stateless_uniform(ids.shape, select_seed).numpy()
    values = tf.random.stateless_uniform([len(ids), PRED], value_seed).numpy()
    random_ids = tf.random.stateless_uniform([len(ids), PRED], token_seed, 0, len(VOCAB), tf.int32).numpy()
    rules = StaticMasker(MaskingRules(masked_lm_prob=0.15, max_predictions_per_seq=PRED,
                                      do_whole_word_mask=whole_word),
                         vocab_size=len(VOCAB), mask_id=MASK, special_ids=(PAD, CLS, SEP),
                         is_subword=np.array([t.startswith("##") for t in VOCAB]))
    for row in range(len(ids)):
        length = int(features["input_mask"][row].sum())
        tokens = ids[row, :length]
        row_keys = keys[row, :length].astype(np.float64)
        if whole_word:
            starts = [group[0] for group in rules.candidate_groups(tokens)]
            row_keys = np.ones(length)
            row_keys[starts] = keys[row, :len(starts)]
        row_u, row_random = np.ones(length, np.float32), np.zeros(length, np.int32)
        count = int(out["masked_lm_weights"][row].sum())
        slots = out["masked_lm_positions"][row, :count]
        row_u[slots] = values[row, :count]
        row_random[slots] = random_ids[row, :count]
        expected_ids, positions, labels = rules.mask_sequence(tokens, MaskDraws(row_keys, row_u, row_random))
        assert positions == slots.tolist(), row
        assert labels == out["masked_lm_ids"][row, :count].tolist()
        assert expected_ids == out["input_word_ids"][row, :length].tolist()

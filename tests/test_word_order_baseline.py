"""The order-blind baseline (the plateau) and the line that names it: on records built so that only the bag of
words, or only word order, predicts the masked word; and on a short real run, whose `bert-pretrain` summary and
`bert-evaluate` output both say "plateau" with the remedy."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.held_out_evaluation import results_lines
from bert_tf.training.word_order_baseline import PLATEAU_MARGIN, order_blind_baseline, plateau_line
from helpers import run_cli
from pretraining_records import serialize

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

MASK, FIRST_WORD = 4, 5
SEQ, PRED = 32, 3


def record(ids, positions, shown=None):
    """A record of the original format: `ids` after [CLS], the words at `positions` (indices into `ids`) masked
    and shown as `shown` (default [MASK])."""
    tokens = np.zeros(SEQ, np.int64)
    tokens[0], tokens[1:len(ids) + 1], tokens[len(ids) + 1] = 2, ids, 3
    at = np.array(positions) + 1
    labels = tokens[at].copy()
    tokens[at] = MASK if shown is None else shown
    return {"input_ids": tokens, "input_mask": (tokens > 0).astype(np.int64), "segment_ids": np.zeros(SEQ, np.int64),
            "masked_lm_positions": at, "masked_lm_ids": labels, "masked_lm_weights": np.ones(PRED, np.float32),
            "next_sentence_labels": np.zeros(1, np.int64)}


def write(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for values in records:
            writer.write(serialize(values))
    return str(path)


def topic_records(rng, count):
    """Ten topics, each a word that fills half of a record among random filler words; the masked words are three
    of the topic word's places: the bag (the topic word's other places) gives them away, their order says nothing."""
    records = []
    for _ in range(count):
        topic = FIRST_WORD + rng.integers(10)
        ids = np.where(rng.random(20) < 0.5, topic, FIRST_WORD + 10 + rng.integers(40, size=20))
        ids[rng.choice(20, 6, replace=False)] = topic
        records.append(record(ids, rng.choice(np.flatnonzero(ids == topic), PRED, replace=False)))
    return records


def cycle_records(rng, count, keep_share=0.0):
    """Ten words in a fixed cycle, three times round from a random start: every record holds the same bag (three
    masked places rarely take away all of a word's copies), and only the neighbours of a masked place say its word.
    With `keep_share`, that share of records shows the masked words themselves instead of [MASK] (as the recipe
    keeps 10% of them)."""
    records = []
    for _ in range(count):
        ids = FIRST_WORD + (rng.integers(10) + np.arange(30)) % 10
        positions = rng.choice(30, PRED, replace=False)
        records.append(record(ids, positions, shown=ids[positions] if rng.random() < keep_share else None))
    return records


def test_the_bag_of_words_gives_the_topic_word_away(tmp_path):
    rng = np.random.default_rng(0)
    train, held = write(tmp_path / "train", topic_records(rng, 3000)), write(tmp_path / "held", topic_records(rng, 500))
    baseline = order_blind_baseline([train], [held])
    assert baseline["mask_id"] == MASK and baseline["beta"] > 0
    assert baseline["accuracy"] > 0.9  # where a constant guess gets about 0.1 (ten topics)


def test_word_order_is_what_it_cannot_see(tmp_path):
    rng = np.random.default_rng(1)
    train, held = write(tmp_path / "train", cycle_records(rng, 3000)), write(tmp_path / "held", cycle_records(rng, 500))
    baseline = order_blind_baseline([train], [held])
    assert baseline["accuracy"] < 0.16  # the ten words are equally likely to it; a neighbour rule gets 1.0

    # The word shown at a masked place (kept, not [MASK]) counts, as it does for a BERT that ignores positions.
    kept = write(tmp_path / "kept", cycle_records(rng, 500, keep_share=0.5))
    with_kept = order_blind_baseline([train], [kept])
    assert with_kept["accuracy"] == pytest.approx(0.5 + 0.5 * 0.1, abs=0.06)


def test_the_plateau_line_comes_within_the_margin_only():
    results = {"masked_lm_accuracy": 0.158, "unigram_baseline": 0.049, "unigram_baseline_token": "the",
               "order_blind_baseline": 0.141, "baseline_source": "baseline_input_file", "global_step": 1500,
               "eval_input_file": "heldout-seq128.tfrecord", "max_seq_length": 128, "max_predictions_per_seq": 20,
               "masked_lm_loss": 5.2, "eval_batches": 30}
    lines = results_lines(results)
    assert lines[2].startswith("order-blind baseline 0.1410: ")
    assert lines[3].startswith("plateau: held-out masked-LM accuracy 0.1580 is under 0.1910 (the order-blind "
                               "baseline 0.1410 + 0.05)") and "--num_train_steps" in lines[3]
    assert sum("plateau" in line for line in lines) == 1
    left = results_lines({**results, "masked_lm_accuracy": 0.141 + PLATEAU_MARGIN + 0.001})
    assert not any("plateau" in line for line in left) and len(left) == 3
    assert plateau_line(0.30, None) is None


def test_a_short_run_is_told_it_sits_on_the_plateau(small_demo, tmp_path):
    """The demo at 10 steps predicts word frequencies only: its summary and bert-evaluate both say so."""
    data, model_dir = small_demo.output_dir / "data", small_demo.output_dir / "model"
    summary = (model_dir / "training_summary.txt").read_text().splitlines()
    plateau = [line for line in summary if "plateau" in line]
    assert len(plateau) == 1 and plateau[0].startswith("plateau: held-out masked-LM accuracy 0.") and \
        "--num_train_steps" in plateau[0], summary
    beside = next(line for line in summary if line.startswith("held-out masked-LM accuracy "))
    baseline = float(beside.split("order-blind baseline ")[1].split(":")[0])
    assert 0.12 < baseline < 0.25, beside  # the Bible at 32 tokens: well above always "," (0.08)

    done = run_cli("evaluate", f"--model_dir={model_dir}", f"--eval_input_file={data / 'heldout_seq32_pred5.tfrecord'}",
                   f"--baseline_input_file={data / 'train_seq32_pred5.tfrecord'}",
                   f"--output_file={tmp_path / 'heldout.json'}")
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "heldout.json").read_text())
    assert results["order_blind_baseline"] == pytest.approx(baseline, abs=5e-5)
    assert results["masked_lm_accuracy"] < results["order_blind_baseline"]
    assert sum(line.startswith("plateau: ") for line in done.stdout.splitlines()) == 1, done.stdout

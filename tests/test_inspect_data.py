"""bert-inspect-data: instances as text, structure checks, statistics and the PNG."""

import re

import numpy as np
import pytest

from bert_tf.instances.options import InstanceOptions
from bert_tf.instances.pipeline import create_pretraining_data
from bert_tf.records.example_encoder import ExampleEncoder
from bert_tf.records.inspection import describe_instance, structure_problems
from bert_tf.records.reader import concatenate, read_records
from bert_tf.records.writer import RoundRobinWriter
from bert_tf.text.bible import read_bible_documents
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.tokenizer import FullTokenizer
from helpers import run_cli

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "##s"]
FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
            "next_sentence_labels")


def record(ids, positions, labels, segment_b_from, seq_len=10, predictions=3, label=1):
    length = len(ids)
    pad = seq_len - length
    return {
        "input_ids": np.array(ids + [0] * pad), "input_mask": np.array([1] * length + [0] * pad),
        "segment_ids": np.array([0] * segment_b_from + [1] * (length - segment_b_from) + [0] * pad),
        "masked_lm_positions": np.array(positions + [0] * (predictions - len(positions))),
        "masked_lm_ids": np.array(labels + [0] * (predictions - len(labels))),
        "masked_lm_weights": np.array([1.0] * len(positions) + [0.0] * (predictions - len(positions)), np.float32),
        "next_sentence_labels": np.array([label])}


def batch_of(*records):
    return {name: np.stack([r[name] for r in records]) for name in FEATURES}


GOOD = record([2, 5, 4, 7, 3, 10, 6, 3], [2, 5], [6, 10], segment_b_from=5)


def test_describe_instance_marks_predictions_with_their_labels():
    text = describe_instance(GOOD, VOCAB)
    assert text == ("next_sentence_label: 1 (random next), length 8, 2 predictions\n"
                    "[CLS] the {[MASK]|cat} sat [SEP] {dog|dog} cat [SEP]")


@pytest.mark.parametrize("broken,rule", [
    (record([2, 5, 4, 7, 3, 10, 6, 3], [2, 5], [6, 3], 5), "[CLS] or [SEP] predicted"),
    (record([2, 5, 4, 7, 3, 10, 6, 3], [5, 2], [10, 6], 5), "positions not increasing"),
    (record([2, 5, 4, 7, 3, 10, 6, 3], [2, 5], [6, 10], 4), "segment_ids not 0 for [CLS] A [SEP], 1 for B [SEP]"),
    (record([5, 5, 4, 7, 3, 10, 6, 3], [2, 5], [6, 10], 5), "not [CLS] first"),
    (record([2, 5, 4, 7, 5, 10, 6, 3], [2, 5], [6, 10], 5), "not exactly two [SEP], one last"),
    (record([2, 5, 4, 7, 3, 10, 6, 3], [2, 9], [6, 10], 5), "position outside the tokens"),
])
def test_structure_checks_name_what_is_broken(broken, rule):
    assert set(structure_problems(batch_of(GOOD), cls_id=2, sep_id=3).values()) == {0}
    problems = structure_problems(batch_of(GOOD, broken, GOOD), cls_id=2, sep_id=3)
    assert problems[rule] == 1, problems


def test_a_random_replacement_that_draws_sep_is_not_a_structure_error():
    # The original's random 10% draws from the whole vocab, specials included.
    replaced = record([2, 5, 3, 7, 3, 10, 6, 3], [2, 5], [6, 10], 5)
    assert set(structure_problems(batch_of(replaced), cls_id=2, sep_id=3).values()) == {0}


def inspect(*args):
    return run_cli("inspect_data", *args)


def test_cli_prints_instances_statistics_and_writes_the_png(tmp_path, uncased_vocab, bible_csv):
    documents = list(read_bible_documents(CorpusCounts(), bible_csv))[:40]
    files = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    summary = create_pretraining_data(iter(documents), FullTokenizer(uncased_vocab), files,
                                      InstanceOptions(dupe_factor=2), num_workers=0, progress=False)
    plot = tmp_path / "stats.png"
    done = inspect(f"--input_file={tmp_path}/*.tfrecord", f"--vocab_file={uncased_vocab}", "--num_examples=3",
                   f"--plot_file={plot}")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.startswith("2 file(s), v1 feature names, max_seq_length 128, max_predictions_per_seq 20")
    assert len(re.findall(r"^instance \d: next_sentence_label: [01] \((random|actual) next\)", out, re.M)) == 3
    assert re.search(r"^\[CLS\] .*\{\[MASK\]\|[^}]+\}.* \[SEP\]$", out, re.M)
    assert f"structure checks: all passed ({summary.statistics.instances} records)" in out
    # The statistics read back from the records are those the creation summary printed (bar the NSP expectation).
    for line in summary.statistics.summary_lines()[2:]:
        assert line in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000

    # A record that predicts [SEP] fails the checks, with the rule named.
    records = concatenate(read_records(files[:1], max_records=5))
    records["masked_lm_ids"][2, 0] = 102
    bad = str(tmp_path / "bad.tfrecord")
    with RoundRobinWriter([bad]) as writer:
        for serialized in ExampleEncoder([(name, name == "masked_lm_weights") for name in FEATURES]).encode(records):
            writer.write(serialized)
    broken = inspect(f"--input_file={bad}", f"--vocab_file={uncased_vocab}", "--num_examples=0")
    assert broken.returncode == 2 and "structure checks: {'[CLS] or [SEP] predicted': 1} (5 records)" in broken.stdout
    missing = inspect(f"--input_file={tmp_path}/none*.tfrecord", f"--vocab_file={uncased_vocab}")
    assert missing.returncode == 2 and "matches no file" in missing.stderr.strip().splitlines()[-1]

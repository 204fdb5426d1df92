"""check_record_files: records of another length or vocab are refused before training, naming file and fix."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.records.checker import check_record_files
from pretraining_records import VOCAB_SIZE, make_instance, serialize, write_records

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def write(path, instances):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for values in instances:
            writer.write(serialize(values))
    return str(path)


def instances(count, seq=16, pred=3, seed=0):
    rng = np.random.default_rng(seed)
    return [make_instance(rng, seq, pred) for _ in range(count)]


def test_good_records_pass_and_the_files_come_back(tmp_path):
    write_records(tmp_path / "a.tfrecord", 5, seq=16, pred=3)
    write_records(tmp_path / "b.tfrecord", 5, seq=16, pred=3, seed=1)
    assert check_record_files(f"{tmp_path}/*.tfrecord", 16, 3, VOCAB_SIZE) == [
        str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]


def test_another_length_is_named_with_its_flag(tmp_path):
    good = write_records(tmp_path / "a.tfrecord", 3, seq=16, pred=3) or str(tmp_path / "a.tfrecord")
    with pytest.raises(InputError, match=r"do not match max_seq_length=32: feature input_ids has shape \[16\]"):
        check_record_files(good, 32, 3, VOCAB_SIZE)
    with pytest.raises(InputError, match=r"max_predictions_per_seq=5: feature masked_lm_positions has shape \[3\]"):
        check_record_files(good, 16, 5, VOCAB_SIZE)
    # A later record of another length than the first one is found too.
    mixed = write(tmp_path / "mixed.tfrecord", instances(2) + instances(1, seq=20))
    with pytest.raises(InputError, match=r"Record 2 of .*mixed.tfrecord has input_ids of length 20, expected \[16\]"):
        check_record_files(mixed, 16, 3, VOCAB_SIZE)


def test_ids_outside_the_vocab_are_named_before_any_gather(tmp_path):
    bad = instances(4)
    bad[3]["input_ids"][1] = VOCAB_SIZE + 7
    path = write(tmp_path / "big_ids.tfrecord", bad)
    with pytest.raises(InputError, match=rf"Record 3 of {path} holds input_ids value {VOCAB_SIZE + 7}, outside "
                                         rf"\[0, vocab_size={VOCAB_SIZE}\)"):
        check_record_files(path, 16, 3, VOCAB_SIZE)
    assert check_record_files(path, 16, 3, VOCAB_SIZE + 8)  # a model with a larger vocab reads them
    labels = instances(2)
    labels[0]["masked_lm_ids"][0] = VOCAB_SIZE
    with pytest.raises(InputError, match="holds masked_lm_ids value"):
        check_record_files(write(tmp_path / "labels.tfrecord", labels), 16, 3, VOCAB_SIZE)
    positions = instances(2)
    positions[1]["masked_lm_positions"][0] = 16
    with pytest.raises(InputError, match=r"masked_lm_positions value 16, outside \[0, max_seq_length=16\)"):
        check_record_files(write(tmp_path / "positions.tfrecord", positions), 16, 3, VOCAB_SIZE)


def test_dynamic_masking_needs_only_input_ids_up_to_the_length(tmp_path):
    short = instances(3, seq=12)
    for values in short:
        values["masked_lm_positions"][:] = 99  # masks are drawn again: their values do not matter
    path = write(tmp_path / "short.tfrecord", short)
    assert check_record_files(path, 16, 3, VOCAB_SIZE, masks_drawn_again=True)
    with pytest.raises(InputError, match="max_seq_length=16"):
        check_record_files(path, 16, 3, VOCAB_SIZE)


def test_unreadable_files_are_named(tmp_path):
    text = tmp_path / "corpus.txt"
    text.write_text("not records\n" * 10)
    with pytest.raises(InputError, match=rf"TFRecord file {text} cannot be read"):
        check_record_files(str(text), 16, 3, VOCAB_SIZE)

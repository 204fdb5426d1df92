"""The training input pipeline on real TFRecord files: values, naming, gzip, sharding, errors, resumption, and
several input sets mixed at their weights."""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import MODEL_FEATURES, pretraining_dataset
from bert_tf.records import feature_spec as spec_lib
from bert_tf.records.example_encoder import ExampleEncoder
from bert_tf.records.packed_rows import RowLayout
from bert_tf.records.writer import RoundRobinWriter

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

SEQ, PRED = 16, 4


def make_instance(index, seq=SEQ, pred=PRED):
    """A record's values (v1 names); the instance's index is stored in masked_lm_ids[0] to follow it."""
    rng = np.random.default_rng(index)
    length = int(rng.integers(6, seq + 1))
    ids = np.zeros(seq, np.int64)
    ids[:length] = rng.integers(5, 60, length)
    ids[0], ids[length - 1] = 1, 2
    num_masked = int(rng.integers(1, pred + 1))
    positions = np.zeros(pred, np.int64)
    positions[:num_masked] = np.sort(rng.choice(np.arange(1, length - 1), num_masked, replace=False))
    labels = np.zeros(pred, np.int64)
    labels[:num_masked] = rng.integers(5, 60, num_masked)
    labels[0] = index
    return {"input_ids": ids, "input_mask": (np.arange(seq) < length).astype(np.int64),
            "segment_ids": (np.arange(seq) >= length // 2).astype(np.int64) * (np.arange(seq) < length),
            "masked_lm_positions": positions, "masked_lm_ids": labels,
            "masked_lm_weights": (np.arange(pred) < num_masked).astype(np.float32),
            "next_sentence_labels": np.array([index % 2], np.int64)}


def write_records(path, indices, names="v1", compression=None, seq=SEQ, pred=PRED):
    """The project's writer (records/writer.py, records/example_encoder.py) in the original feature order."""
    encoder = ExampleEncoder([(spec_lib.record_name(name, names), dtype == tf.float32)
                              for name, dtype, _ in spec_lib.V1_FEATURES])
    instances = [make_instance(index, seq, pred) for index in indices]
    arrays = {spec_lib.record_name(name, names): np.stack([instance[name] for instance in instances])
              for name, _, _ in spec_lib.V1_FEATURES}
    with RoundRobinWriter([str(path)], gzip=compression == "GZIP") as writer:
        for record in encoder.encode(arrays):
            writer.write(record)
    return str(path)


def instance_ids(dataset, max_batches=None):
    ids = []
    for i, batch in enumerate(dataset):
        if max_batches is not None and i >= max_batches:
            break
        ids.extend(batch["masked_lm_ids"][:, 0].numpy().tolist())
    return ids


def test_values_shapes_and_dtypes_round_trip_exactly(tmp_path):
    path = write_records(tmp_path / "a.tfrecord", range(12))
    batches = list(pretraining_dataset(InputSpec(path, SEQ, PRED, batch_size=4, is_training=False)))
    assert len(batches) == 3
    for b, batch in enumerate(batches):
        assert sorted(batch) == sorted(MODEL_FEATURES)
        for row in range(4):
            expected = make_instance(4 * b + row)
            for v1_name, dtype, _ in spec_lib.V1_FEATURES:
                name = spec_lib.V1_TO_MODEL_NAMES.get(v1_name, v1_name)
                np.testing.assert_array_equal(batch[name][row].numpy(), expected[v1_name])
        for name, value in batch.items():
            assert value.dtype == (tf.float32 if name == "masked_lm_weights" else tf.int32)
    assert batches[0]["input_word_ids"].shape == (4, SEQ)
    assert batches[0]["masked_lm_positions"].shape == (4, PRED)
    assert batches[0]["next_sentence_labels"].shape == (4, 1)
    # drop_remainder: 13 records give 3 full batches of 4, the shape stays static.
    path = write_records(tmp_path / "b.tfrecord", range(13))
    dataset = pretraining_dataset(InputSpec(path, SEQ, PRED, batch_size=4, is_training=False))
    assert dataset.element_spec["input_word_ids"].shape == (4, SEQ)
    assert instance_ids(dataset) == list(range(12))


def test_v1_and_v2_names_give_the_same_batches(tmp_path):
    v1 = write_records(tmp_path / "v1.tfrecord", range(8), names="v1")
    v2 = write_records(tmp_path / "v2.tfrecord", range(8), names="v2")
    a = next(iter(pretraining_dataset(InputSpec(v1, SEQ, PRED, 8, is_training=False))))
    b = next(iter(pretraining_dataset(InputSpec(v2, SEQ, PRED, 8, is_training=False, names="v2"))))
    for name in MODEL_FEATURES:
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy())
    with pytest.raises(ValueError, match=r"names='v1' was asked but the records of .*v2.tfrecord use the v2"):
        pretraining_dataset(InputSpec(v2, SEQ, PRED, 8, names="v1"))


def test_gzip_is_recognised_per_file_and_globs_combine(tmp_path):
    write_records(tmp_path / "part-0.tfrecord", range(0, 10))
    write_records(tmp_path / "part-1.tfrecord.gz", range(10, 20), compression="GZIP")
    write_records(tmp_path / "extra.tfrecord", range(20, 30), names="v1")
    patterns = f"{tmp_path}/part-*,{tmp_path}/extra.tfrecord,{tmp_path}/part-0.tfrecord"
    ids = instance_ids(pretraining_dataset(InputSpec(patterns, SEQ, PRED, 2, is_training=False)))
    assert sorted(ids) == list(range(30))  # part-0 named twice is read once
    only_gzip = pretraining_dataset(InputSpec(str(tmp_path / "part-1.tfrecord.gz"), SEQ, PRED, 2, is_training=False,
                                              compression="GZIP"))
    assert instance_ids(only_gzip) == list(range(10, 20))
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        pretraining_dataset(InputSpec(f"{tmp_path}/nothing-here-*", SEQ, PRED, 2))


@pytest.mark.parametrize("num_files", [4, 1])
def test_two_input_pipelines_read_every_record_exactly_once(tmp_path, num_files):
    # 4 files over 2 pipelines: by file; 1 file: by record.
    per_file = 24 // num_files
    files = [write_records(tmp_path / f"f{k}.tfrecord", range(k * per_file, (k + 1) * per_file))
             for k in range(num_files)]
    shares = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                             num_replicas_in_sync=2)
        ids = instance_ids(pretraining_dataset(InputSpec(files, SEQ, PRED, 4, is_training=False),
                                               input_context=context))
        assert len(ids) == 12
        shares.append(set(ids))
    assert sorted(shares[0]) + sorted(shares[1]) != list(range(24)) or num_files == 4
    assert sorted(shares[0] | shares[1]) == list(range(24)) and not shares[0] & shares[1]
    # Training: each pipeline repeats its own share forever, shuffled.
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=2)
    ids = instance_ids(pretraining_dataset(InputSpec(files, SEQ, PRED, 4, seed=3), input_context=context),
                       max_batches=12)
    assert len(ids) == 48 and set(ids) <= shares[1] and len(set(ids)) >= 10


def test_same_seed_same_order_other_seed_other_order_and_training_repeats(tmp_path):
    files = [write_records(tmp_path / f"f{k}.tfrecord", range(k * 20, k * 20 + 20)) for k in range(3)]

    def first(seed):
        return instance_ids(pretraining_dataset(InputSpec(files, SEQ, PRED, 5, seed=seed, shuffle_buffer=16)), 30)

    a = first(7)
    assert a == first(7)
    assert a != first(8)
    assert len(a) == 150 and set(a) == set(range(60))  # 2.5 epochs: every record, repeated
    assert a[:60] != sorted(a[:60])


def _truncate(path, keep_bytes):
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:keep_bytes])


def _record_offsets(path):
    """Start of each record in an uncompressed TFRecord file (8-byte length, 4-byte crc, data, 4-byte crc)."""
    offsets, offset, size = [], 0, os.path.getsize(path)
    with open(path, "rb") as f:
        while offset < size:
            offsets.append(offset)
            f.seek(offset)
            offset += 16 + int.from_bytes(f.read(8), "little")
    return offsets


@pytest.mark.parametrize("damage", ["inside_record", "inside_header", "flipped_byte", "gzip_cut"])
def test_truncated_or_corrupt_file_fails_naming_the_file(tmp_path, damage):
    good = write_records(tmp_path / "good.tfrecord", range(40))
    bad = write_records(tmp_path / "bad.tfrecord", range(40, 80), compression="GZIP" if damage == "gzip_cut" else None)
    if damage == "gzip_cut":
        _truncate(bad, os.path.getsize(bad) - 30)
    else:
        start = _record_offsets(bad)[25]
        if damage == "inside_record":
            _truncate(bad, start + 40)
        elif damage == "inside_header":
            # tf.data alone ends such a file silently after record 24, as if it were complete.
            _truncate(bad, start + 5)
            assert sum(1 for _ in tf.data.TFRecordDataset(bad)) == 25
        else:
            with open(bad, "r+b") as f:
                f.seek(start + 30)
                byte = f.read(1)
                f.seek(start + 30)
                f.write(bytes([byte[0] ^ 0xFF]))
    for is_training in (False, True):
        dataset = pretraining_dataset(InputSpec([good, bad], SEQ, PRED, 4, is_training=is_training, seed=1))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"TFRecord file .*bad\.tfrecord is truncated"):
            for _ in zip(range(100), dataset):
                pass


def test_records_of_another_length_fail_with_expected_and_found_shapes(tmp_path):
    long_path = write_records(tmp_path / "seq32.tfrecord", range(8), seq=32, pred=6)
    with pytest.raises(ValueError, match=r"max_seq_length=16: feature input_ids has shape \[32\], expected \[16\]"):
        pretraining_dataset(InputSpec(long_path, SEQ, PRED, 4))
    with pytest.raises(ValueError, match=r"max_predictions_per_seq=4: feature masked_lm_positions has shape "
                                         r"\[6\], expected \[4\]"):
        pretraining_dataset(InputSpec(write_records(tmp_path / "p6.tfrecord", range(8), pred=6), SEQ, PRED, 4))
    # A later file of another length is caught while reading, with its name.
    first = write_records(tmp_path / "a.tfrecord", range(8))
    dataset = pretraining_dataset(InputSpec([first, long_path], SEQ, PRED, 4, is_training=False, cycle_length=1))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"A record in .*seq32\.tfrecord .* feature input_ids has shape \[32\], expected \[16\]"):
        list(dataset)


def test_bad_arguments_are_explained(tmp_path):
    path = write_records(tmp_path / "a.tfrecord", range(4))
    with pytest.raises(ValueError, match="batch_size=0 must be a positive integer"):
        pretraining_dataset(InputSpec(path, SEQ, PRED, 0))
    with pytest.raises(ValueError, match="compression='lz4' is unknown"):
        pretraining_dataset(InputSpec(path, SEQ, PRED, 2, compression="lz4"))
    other = tmp_path / "other.tfrecord"
    with tf.io.TFRecordWriter(str(other)) as writer:
        writer.write(tf.train.Example(features=tf.train.Features(feature={"text": tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[b"hi"]))})).SerializeToString())
    with pytest.raises(ValueError, match=r"neither input_ids \(v1\) nor input_word_ids \(v2\), only \['text'\]"):
        pretraining_dataset(InputSpec(str(other), SEQ, PRED, 2))


def test_iterator_checkpoint_resumes_with_exactly_the_next_batches(tmp_path):
    files = [write_records(tmp_path / f"f{k}.tfrecord", range(k * 30, k * 30 + 30)) for k in range(3)]

    def dataset():
        return pretraining_dataset(InputSpec(files, SEQ, PRED, 4, seed=11, shuffle_buffer=20, cycle_length=3))

    iterator = iter(dataset())
    for _ in range(13):  # mid-epoch (90 records = 22.5 batches)
        next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    saved = checkpoint.write(str(tmp_path / "ckpt" / "it"))
    expected = [next(iterator) for _ in range(20)]  # crosses into the next epoch

    resumed = iter(dataset())
    next(resumed)  # a fresh iterator that has moved: the restore must still put it at batch 14
    tf.train.Checkpoint(iterator=resumed).read(saved).assert_consumed()
    for want in expected:
        got = next(resumed)
        for name in MODEL_FEATURES:
            np.testing.assert_array_equal(got[name].numpy(), want[name].numpy())


def set_of(ids):
    """Which of two input sets each instance came from (the general set's indices start at 10,000)."""
    return np.asarray(ids) >= 10_000


def test_input_sets_are_drawn_at_their_weights_deterministically(tmp_path):
    for k in range(2):
        write_records(tmp_path / f"domain-{k}.tfrecord", range(k * 50, k * 50 + 50))
    patterns = [f"{tmp_path}/domain-*.tfrecord", write_records(tmp_path / "general.tfrecord", range(10_000, 10_040))]

    def drawn(seed, batches=30):
        return instance_ids(pretraining_dataset(InputSpec(patterns, SEQ, PRED, 100, seed=seed, shuffle_buffer=16,
                                                          weights=[0.8, 0.2])), batches)

    ids = drawn(seed=3)
    # 3,000 draws at 0.2: the general set's fraction within 4 binomial standard deviations (0.029) of it. Weights
    # left out would draw each set half the time (0.5); one set only, 0 or 1.
    fraction, sd = set_of(ids).mean(), np.sqrt(0.2 * 0.8 / len(ids))
    assert len(ids) == 3000 and abs(fraction - 0.2) < 4 * sd, fraction
    assert set(ids) == set(range(100)) | set(range(10_000, 10_040))  # every record of both sets, repeated
    assert drawn(seed=3, batches=5) == ids[:500]  # the same seed, the same draws and order
    assert drawn(seed=4, batches=5) != ids[:500]
    # Each set keeps its own order: the domain records drawn are those the domain set yields alone, in order.
    domain_alone = instance_ids(pretraining_dataset(InputSpec(patterns[0], SEQ, PRED, 100, seed=3,
                                                              shuffle_buffer=16)), 5)
    drawn_domain = [i for i in ids[:500] if i < 10_000]
    assert drawn_domain == domain_alone[:len(drawn_domain)]
    # Row packing works on the mixed stream as on one input: rows of instances of both sets.
    rows = next(iter(pretraining_dataset(InputSpec(patterns, SEQ, PRED, 32, seed=3, shuffle_buffer=16,
                                                   weights=[0.8, 0.2], row_layout=RowLayout(SEQ, 3, 12),
                                                   packing_window=64))))
    labels = rows["masked_lm_ids"].numpy()
    assert rows["input_instance_ids"].shape == (32, SEQ) and rows["next_sentence_weights"].shape == (32, 3)
    assert (labels >= 10_000).any() and ((labels >= 60) & (labels < 10_000)).any()


def test_input_sets_that_do_not_match_fail_naming_the_file(tmp_path):
    domain = write_records(tmp_path / "domain.tfrecord", range(20))
    longer = write_records(tmp_path / "general-seq32.tfrecord", range(20), seq=32, pred=6)
    with pytest.raises(ValueError, match=r"Records in .*general-seq32\.tfrecord do not match max_seq_length=16: "
                                         r"feature input_ids has shape \[32\], expected \[16\]"):
        pretraining_dataset(InputSpec([domain, longer], SEQ, PRED, 4, seed=1, weights=[0.9, 0.1]))
    v2 = write_records(tmp_path / "general-v2.tfrecord", range(20), names="v2")
    with pytest.raises(ValueError, match=r"The records of .*general-v2\.tfrecord \(v2 names, .*\) do not match those "
                                         r"of .*domain\.tfrecord \(v1 names, .*\): the input sets mixed in one phase"):
        pretraining_dataset(InputSpec([domain, v2], SEQ, PRED, 4, seed=1, weights=[0.9, 0.1]))
    with pytest.raises(ValueError, match=r"input sets are mixed only for training \(is_training=True\)"):
        pretraining_dataset(InputSpec([domain, domain], SEQ, PRED, 4, is_training=False, weights=[0.5, 0.5]))
    with pytest.raises(ValueError, match=r"weights=\[1.0\] needs one input set per weight"):
        pretraining_dataset(InputSpec([domain, domain], SEQ, PRED, 4, weights=[1.0]))
    with pytest.raises(ValueError, match=r"weights=\[0.0, 1.0\] must be positive finite numbers"):
        pretraining_dataset(InputSpec([domain, domain], SEQ, PRED, 4, weights=[0.0, 1.0]))


def test_mixed_iterator_checkpoint_resumes_with_exactly_the_next_batches(tmp_path):
    domain = write_records(tmp_path / "domain.tfrecord", range(30))
    general = write_records(tmp_path / "general.tfrecord", range(10_000, 10_030))

    def dataset():
        return pretraining_dataset(InputSpec([domain, general], SEQ, PRED, 4, seed=5, shuffle_buffer=8,
                                             weights=[0.7, 0.3]))

    iterator = iter(dataset())
    for _ in range(9):
        next(iterator)
    saved = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "ckpt" / "it"))
    expected = [next(iterator)["masked_lm_ids"].numpy() for _ in range(15)]
    resumed = iter(dataset())
    tf.train.Checkpoint(iterator=resumed).read(saved).assert_consumed()
    for want in expected:
        np.testing.assert_array_equal(next(resumed)["masked_lm_ids"].numpy(), want)

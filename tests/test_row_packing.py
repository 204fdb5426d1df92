"""Packed rows (several instances per record): the packing rule, the format's round trip, and the instances that
bert-create-pretraining-data --pack writes (exactly those of the unpacked records)."""

import os
import re

import numpy as np
import pytest

from bert_tf.errors import InputError
from bert_tf.instances.best_fit_rows import assign_rows, pack_instances
from bert_tf.instances.options import InstanceOptions
from bert_tf.instances.pipeline import create_pretraining_data
from bert_tf.records.checker import check_record_files
from bert_tf.records.packed_rows import RowLayout, split_rows
from bert_tf.records.reader import concatenate, read_records
from bert_tf.records.schema import read_schema
from bert_tf.records.writer import RoundRobinWriter
from bert_tf.text.bible import read_bible_documents
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.tokenizer import FullTokenizer
from helpers import run_cli
from pretraining_records import make_instance, serialize

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

UNPACKED_NAMES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                  "masked_lm_weights", "next_sentence_labels")


def short_instances(count, row_length, seed=0, seq=16, pred=4):
    """Unpacked instances of 8-16 tokens padded to `row_length`, so that several fit in a row."""
    rng = np.random.default_rng(seed)
    rows = [make_instance(rng, seq, pred) for _ in range(count)]
    out = {name: np.stack([r[name] for r in rows]) for name in UNPACKED_NAMES}
    for name in ("input_ids", "input_mask", "segment_ids"):
        out[name] = np.pad(out[name], ((0, 0), (0, row_length - seq)))
    return out


def as_multiset(instances, names=UNPACKED_NAMES):
    """The instances as sorted tuples of all their values: equal for the same instances in any order."""
    return sorted(tuple(np.concatenate([np.asarray(instances[n][i], np.float64).ravel() for n in names]).tolist())
                  for i in range(len(instances["input_ids"])))


def test_best_fit_decreasing_hand_computed():
    # Longest first: 100 opens row 0 (28 left), 60 opens row 1 (68 left), 30 goes to row 1 (the only room), 20 to
    # row 0 (the least room that takes it).
    assignment = assign_rows([100, 60, 30, 20], [15, 9, 5, 3], RowLayout(128, 3, 23))
    assert assignment.num_rows == 2
    assert assignment.row_of.tolist() == [0, 1, 1, 0]
    assert assignment.start_of.tolist() == [0, 0, 60, 100]
    assert assignment.slot_of.tolist() == [0, 0, 1, 1]
    assert assignment.prediction_start_of.tolist() == [0, 0, 9, 15]
    # The cap on instances per row and on prediction slots opens new rows.
    assert assign_rows([10] * 5, [1] * 5, RowLayout(128, 2, 23)).row_of.tolist() == [0, 0, 1, 1, 2]
    assert assign_rows([10] * 3, [12, 12, 1], RowLayout(128, 3, 23)).row_of.tolist() == [0, 1, 0]


def test_every_instance_placed_whole_and_rows_within_limits():
    lengths = np.random.default_rng(1).integers(4, 129, 500)
    predictions = np.minimum(20, np.maximum(1, np.round(lengths * 0.15))).astype(int)
    layout = RowLayout(128, 3, 23)
    a = assign_rows(lengths, predictions, layout)
    used = np.zeros(a.num_rows, int)
    np.add.at(used, a.row_of, lengths)
    assert used.max() <= 128 and np.bincount(a.row_of).max() <= 3
    # The instances of a row lie back to back from 0, in slot order.
    for row in range(a.num_rows):
        mine = np.nonzero(a.row_of == row)[0]
        order = mine[np.argsort(a.slot_of[mine])]
        assert a.start_of[order].tolist() == np.concatenate([[0], np.cumsum(lengths[order])[:-1]]).tolist()
    # Packing beats one instance per row by the share the padding took.
    assert a.num_rows < 0.8 * len(lengths)


def test_round_trip_through_records(tmp_path):
    instances = short_instances(40, row_length=48)
    layout = RowLayout(48, 3, 12)
    rows = pack_instances(instances, layout)
    assert rows["instance_ids"].max(axis=1).mean() > 2  # mostly three instances a row
    path = str(tmp_path / "packed.tfrecord")
    with RoundRobinWriter([path]) as writer:
        for i in range(len(rows["input_ids"])):
            writer.write(serialize({name: value[i] for name, value in rows.items()}))
    schema = read_schema([path])
    assert schema.packed and schema.row_layout == layout
    read = concatenate(read_records([path]))
    assert {name: value.tolist() for name, value in read.items()} == {n: v.tolist() for n, v in rows.items()}
    back, row_of = split_rows(read, max_predictions_per_seq=4)
    assert as_multiset(back) == as_multiset(instances)
    assert np.bincount(row_of).tolist() == rows["instance_ids"].max(axis=1).tolist()
    assert check_record_files(path, 48, 4, vocab_size=64) == [path]
    with pytest.raises(InputError, match="Packed rows in .* have 48 tokens, not max_seq_length=64"):
        check_record_files(path, 64, 4, vocab_size=64)


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(uncased_vocab)


@pytest.fixture(scope="module")
def bible_documents(bible_csv):
    return list(read_bible_documents(CorpusCounts(), bible_csv))[:120]


def write(documents, tokenizer, directory, num_workers=0, **options):
    os.makedirs(directory)
    files = [os.path.join(directory, f"part-{i}.tfrecord") for i in range(2)]
    summary = create_pretraining_data(iter(documents), tokenizer, files,
                                      InstanceOptions(dupe_factor=1, shard_size_mb=0.05, **options),
                                      num_workers=num_workers, progress=False)
    return summary, files


@pytest.mark.parametrize("whole_words", [False, True])
def test_packed_records_hold_exactly_the_unpacked_instances(bible_documents, tokenizer, tmp_path, whole_words):
    options = {"max_seq_length": 128, "max_predictions_per_seq": 20, "random_seed": 3,
               "do_whole_word_mask": whole_words}
    unpacked_summary, unpacked_files = write(bible_documents, tokenizer, tmp_path / "unpacked", **options)
    packed_summary, packed_files = write(bible_documents, tokenizer, tmp_path / "packed", pack=True, **options)
    unpacked = concatenate(read_records(unpacked_files))
    packed = concatenate(read_records(packed_files))
    instances, _ = split_rows(packed, max_predictions_per_seq=20)
    # Tokens, segments, masked positions and ids, labels: none dropped, none cut, none changed.
    assert len(instances["input_ids"]) == len(unpacked["input_ids"]) == unpacked_summary.statistics.instances
    assert as_multiset(instances) == as_multiset(unpacked)
    rows = packed_summary.statistics.rows
    assert rows == len(packed["input_ids"]) < 0.97 * len(unpacked["input_ids"])
    assert packed_summary.statistics.non_padding_share() > unpacked_summary.statistics.non_padding_share() + 0.05
    assert "instances per row" in "\n".join(packed_summary.summary_lines())


def test_packed_records_same_bytes_for_any_worker_count(bible_documents, tokenizer, tmp_path):
    outputs = [[open(f, "rb").read() for f in write(bible_documents, tokenizer, tmp_path / f"w{n}", num_workers=n,
                                                     max_seq_length=64, max_predictions_per_seq=10, pack=True)[1]]
               for n in (0, 2)]
    assert outputs[0] == outputs[1] and len(outputs[0][0]) > 10_000


def test_cli_pack_then_inspect(bible_documents, uncased_vocab, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(document) for document in bible_documents[:30]) + "\n")
    made = run_cli("create_pretraining_data", f"--input_file={corpus}", f"--output_file={tmp_path}/rows@2",
                   f"--vocab_file={uncased_vocab}", "--max_seq_length=256", "--max_predictions_per_seq=40",
                   "--dupe_factor=1", "--num_workers=0", "--pack", "--noprogress")
    assert made.returncode == 0, made.stderr[-3000:]
    assert re.search(r"^packed rows: \d+, 1\.\d\d instances per row; \d+\.\d\d% non-padding tokens", made.stdout,
                     re.M), made.stdout
    shown = run_cli("inspect_data", f"--input_file={tmp_path}/rows-*", f"--vocab_file={uncased_vocab}",
                    "--num_examples=2")
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "packed rows (format v1): up to 3 instances and 42 predictions per row" in shown.stdout
    assert re.search(r"^instance 1 \(row [01]\): next_sentence_label", shown.stdout, re.M)
    assert re.search(r"structure checks: all passed \(\d+ instances in \d+ rows\)", shown.stdout)
    packed_line = next(line for line in made.stdout.splitlines() if line.startswith("packed rows:"))
    assert packed_line in shown.stdout  # the same count read back from the records


# --- inside tf.data and the model ---------------------------------------------------------------------------------

WWM_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)] + \
    [f"##p{i}" for i in range(19)]


def masked_instances(count, row_length, whole_words, seed=0):
    """Unpacked instances of 8-16 tokens (a third of them word pieces), masked by the dynamic masker's rules."""
    import tensorflow as tf

    from bert_tf.inputs.dynamic_masking import DynamicMasker

    rng = np.random.default_rng(seed)
    ids = np.zeros((count, row_length), np.int64)
    types = np.zeros_like(ids)
    for i in range(count):
        length = int(rng.integers(8, 17))
        split = int(rng.integers(2, length - 2))
        ids[i, :length] = rng.integers(5, 64, length)
        ids[i, [0, split, length - 1]] = [2, 3, 3]
        types[i, split + 1:length] = 1
    features = {"input_word_ids": tf.constant(ids, tf.int32), "input_mask": tf.constant(ids > 0, tf.int32),
                "input_type_ids": tf.constant(types, tf.int32),
                "next_sentence_labels": tf.constant(rng.integers(0, 2, (count, 1)), tf.int32)}
    masker = DynamicMasker(WWM_VOCAB, do_whole_word_mask=whole_words)
    return masker.mask_batch(features, 4, tf.constant([seed, 1], tf.int64))


def as_records(features):
    """Model-named features -> v1-named numpy arrays."""
    from bert_tf.records.feature_spec import V1_TO_MODEL_NAMES
    to_v1 = {model: v1 for v1, model in V1_TO_MODEL_NAMES.items()}
    return {to_v1.get(k, k): np.asarray(v) for k, v in features.items()}


def test_tensorflow_packing_gives_the_numpy_rows():
    from bert_tf.inputs import rows_in_tf_data as tf_packing

    instances = masked_instances(60, 48, whole_words=False)
    layout = RowLayout(48, 3, 9)
    rows = as_records(tf_packing.pack_instances(instances, layout))
    expected = pack_instances(as_records(instances), layout)
    expected.pop("packed_row_format")
    assert {k: v.tolist() for k, v in rows.items()} == {k: v.tolist() for k, v in expected.items()}


@pytest.mark.parametrize("whole_words", [False, True])
def test_packed_batch_has_the_losses_of_its_instances_unpacked(whole_words):
    import keras

    from bert_tf.inputs import rows_in_tf_data as tf_packing
    from bert_tf.modeling.pretrainer import BertPretrainer
    from helpers import tiny_config

    instances = masked_instances(12, 48, whole_words, seed=4)
    rows = tf_packing.pack_instances(instances, RowLayout(48, 3, 12))
    assert 4 <= rows["input_word_ids"].shape[0] < 12  # several instances a row
    keras.utils.set_random_seed(0)
    # initializer_range 0.2: attention far from uniform, so a leak across instances shows.
    model = BertPretrainer(tiny_config(max_position_embeddings=48, hidden_dropout_prob=0.0, initializer_range=0.2,
                                       attention_probs_dropout_prob=0.0))
    unpacked = model.compute_losses(model(instances, training=True), instances)
    packed_outputs = model(rows, training=True)
    assert tuple(packed_outputs["nsp_logits"].shape) == (rows["input_word_ids"].shape[0], 3, 2)
    packed = model.compute_losses(packed_outputs, rows)
    for name, value in unpacked.items():
        np.testing.assert_allclose(float(packed[name]), float(value), rtol=1e-5, atol=1e-6, err_msg=name)
    # Per term: each masked position and each instance scores the same logits in both layouts.
    unpacked_mlm = np.asarray(model(instances)["mlm_logits"])[np.asarray(instances["masked_lm_weights"]) > 0]
    packed_mlm = np.asarray(packed_outputs["mlm_logits"])[np.asarray(rows["masked_lm_weights"]) > 0]
    np.testing.assert_allclose(np.sort(packed_mlm, axis=0), np.sort(unpacked_mlm, axis=0), atol=1e-5)
    # Without the block-diagonal attention the instances would see each other, and the losses differ.
    leaky = {k: v for k, v in rows.items() if k != "input_instance_ids"}
    leaky["input_instance_ids"] = rows["input_mask"]
    leaky_mlm = np.asarray(model(leaky)["mlm_logits"])[np.asarray(rows["masked_lm_weights"]) > 0]
    assert np.abs(leaky_mlm - packed_mlm).max() > 1e-3


def write_rows(path, arrays):
    with RoundRobinWriter([str(path)]) as writer:
        for i in range(len(arrays["input_ids"])):
            writer.write(serialize({name: value[i] for name, value in arrays.items()}))
    return str(path)


def test_pipeline_packs_unpacked_records_keeping_every_instance(tmp_path):
    from bert_tf.inputs.input_spec import InputSpec
    from bert_tf.inputs.pretraining_dataset import pretraining_dataset

    instances = short_instances(50, row_length=48, seed=2)
    path = write_rows(tmp_path / "unpacked.tfrecord", instances)
    layout = RowLayout(48, 3, 12)
    batches = list(pretraining_dataset(InputSpec(path, 48, 4, batch_size=1, is_training=False, row_layout=layout,
                                                 packing_window=16, seed=0)))
    rows = {name: np.concatenate([np.asarray(b[name]) for b in batches]) for name in batches[0]}
    assert rows["input_position_ids"].shape == (len(batches), 48) and rows["next_sentence_labels"].shape[1] == 3
    back, _ = split_rows(as_records(rows), max_predictions_per_seq=4)
    assert as_multiset(back) == as_multiset(instances)
    assert len(batches) < 0.5 * 50


@pytest.mark.parametrize("packed_records", [False, True])
def test_packed_pipeline_resumes_bit_identically(tmp_path, packed_records):
    import tensorflow as tf

    from bert_tf.inputs.dynamic_masking import DynamicMasker
    from bert_tf.inputs.input_spec import InputSpec
    from bert_tf.inputs.pretraining_dataset import pretraining_dataset

    instances = short_instances(120, row_length=48, seed=5)
    layout = RowLayout(48, 3, 12)
    data = pack_instances(instances, layout) if packed_records else instances
    path = write_rows(tmp_path / "records.tfrecord", data)
    masker = DynamicMasker(WWM_VOCAB)

    def dataset():
        return pretraining_dataset(InputSpec(path, 48, 4, batch_size=4, seed=7, shuffle_buffer=32, row_layout=layout,
                                             packing_window=24, masker=masker))

    iterator = iter(dataset())
    for _ in range(3):
        next(iterator)
    saved = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "iterator"))
    expected = [next(iterator) for _ in range(5)]
    resumed = iter(dataset())
    tf.train.Checkpoint(iterator=resumed).read(saved).assert_consumed()
    for want, got in zip(expected, [next(resumed) for _ in range(5)]):
        assert {k: v.numpy().tolist() for k, v in want.items()} == {k: v.numpy().tolist() for k, v in got.items()}


def test_dynamic_masking_counts_and_caps_per_instance(tmp_path):
    from bert_tf.inputs.dynamic_masking import DynamicMasker
    from bert_tf.inputs.input_spec import InputSpec
    from bert_tf.inputs.pretraining_dataset import pretraining_dataset

    instances = short_instances(60, row_length=48, seed=6)
    layout = RowLayout(48, 3, 12)
    path = write_rows(tmp_path / "rows.tfrecord", pack_instances(instances, layout))
    rows = next(iter(pretraining_dataset(InputSpec(path, 48, 4, batch_size=8, seed=1,
                                                   masker=DynamicMasker(WWM_VOCAB), is_training=False))))
    back, row_of = split_rows(as_records(rows), max_predictions_per_seq=4)
    lengths = back["input_mask"].sum(axis=1)
    counts = back["masked_lm_weights"].sum(axis=1)
    # The original's budget of each instance alone: min(cap, max(1, round(0.15 * its length))); 8-16 tokens give
    # 1-2, so the cap of 4 never binds, and each instance gets exactly its budget.
    np.testing.assert_array_equal(counts, np.minimum(4, np.maximum(1, np.round(lengths * 0.15))))
    for i in range(len(lengths)):
        chosen = back["masked_lm_positions"][i, :int(counts[i])]
        assert np.all((chosen >= 1) & (chosen < lengths[i] - 1))  # within its own tokens, never [CLS]/last [SEP]
    # Undoing the masks gives the instances' tokens back.
    restored = back["input_ids"].copy()
    for i in range(len(lengths)):
        restored[i, back["masked_lm_positions"][i, :int(counts[i])]] = back["masked_lm_ids"][i, :int(counts[i])]
    original = instances["input_ids"].copy()
    for i in range(len(original)):
        c = int(instances["masked_lm_weights"][i].sum())
        original[i, instances["masked_lm_positions"][i, :c]] = instances["masked_lm_ids"][i, :c]
    originals = {tuple(row) for row in original.tolist()}
    assert all(tuple(row) in originals for row in restored.tolist())


def test_bert_pretrain_on_packed_rows(tmp_path):
    import yaml

    from helpers import tiny_model_section
    from pretraining_records import write_vocab

    layout = RowLayout(32, 3, 8)  # what the run derives: min(3 x 4, ceil(32 x 0.15) + 3) slots
    train = write_rows(tmp_path / "train.tfrecord", short_instances(200, row_length=32, seed=8))
    heldout = write_rows(tmp_path / "heldout.tfrecord", pack_instances(short_instances(60, 32, seed=9), layout))
    recipe = {"name": "packed", "model": tiny_model_section(), "train_batch_size": 4, "num_train_steps": 6,
              "num_warmup_steps": 2, "learning_rate": 1e-3, "save_checkpoints_steps": 6, "iterations_per_loop": 3,
              "row_packing": {"window": 32},
              "phases": [{"name": "p", "num_steps": 6, "max_seq_length": 32, "max_predictions_per_seq": 4}]}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    done = run_cli("pretrain", f"--config={tmp_path / 'recipe.yaml'}", f"--model_dir={tmp_path / 'run'}",
                   f"--input_file={train}", f"--eval_input_file={heldout}", "--row_packing",
                   f"--vocab_file={write_vocab(tmp_path / 'vocab.txt')}", "--peak_tflops=1")
    assert done.returncode == 0, done.stderr[-3000:]
    from bert_tf.training.training_log import read_eval_results
    results = read_eval_results(str(tmp_path / "run"))
    assert np.isfinite(results["loss"]) and 0 <= results["next_sentence_accuracy"] <= 1


def test_record_checker_reports_instances_per_record_and_padding(tmp_path, caplog):
    instances = short_instances(30, row_length=48, seed=3)
    unpacked = write_rows(tmp_path / "unpacked.tfrecord", instances)
    rows = pack_instances(instances, RowLayout(48, 3, 12))
    packed = write_rows(tmp_path / "packed.tfrecord", rows)
    share = instances["input_mask"][:16].sum() / (16 * 48)
    packed_share = rows["input_mask"].sum() / (len(rows["input_mask"]) * 48)
    with caplog.at_level("INFO", logger="absl"):
        check_record_files(unpacked, 48, 4, vocab_size=64)
        check_record_files(packed, 48, 4, vocab_size=64)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Checked the first")]
    assert lines[0] == (f"Checked the first 16 record(s) of 1 file(s): 1.00 instances per record, "
                        f"{100 * share:.1f}% non-padding tokens.")
    assert lines[1] == (f"Checked the first 10 record(s) of 1 file(s): 3.00 instances per record, "
                        f"{100 * packed_share:.1f}% non-padding tokens.")

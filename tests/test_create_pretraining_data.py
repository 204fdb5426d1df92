"""bert-create-pretraining-data: the original algorithm, its statistics on real text, the records, determinism."""

import os
import random
import signal
import subprocess
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.instances.masking import MaskingRules, StaticMasker
from bert_tf.instances.options import InstanceOptions
from bert_tf.instances.pipeline import create_pretraining_data
from bert_tf.instances.sentence_pairs import PairSpan, SentencePairRules, instances_from_document, truncate_seq_pair
from bert_tf.instances.shard import TokenizedShard, pair_spans
from bert_tf.records.example_encoder import ExampleEncoder
from bert_tf.records.feature_spec import feature_spec
from bert_tf.records.inspection import structure_problems
from bert_tf.records.reader import concatenate, read_records
from bert_tf.records.schema import RecordSchema
from bert_tf.records.writer import RoundRobinWriter, check_outputs_spare_inputs, expand_output_files
from bert_tf.text.bible import read_bible_documents
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.tokenizer import FullTokenizer
from helpers import run_cli, start_cli

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


class ScriptedRng:
    """Stands in for random.Random in hand-computed cases: returns the values given, in order."""

    def __init__(self, randoms=(), randints=()):
        self.randoms, self.randints = list(randoms), list(randints)

    def random(self):
        return self.randoms.pop(0)

    def randint(self, a, b):
        value = self.randints.pop(0)
        assert a <= value <= b, (a, value, b)
        return value


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(uncased_vocab)


@pytest.fixture(scope="module")
def bible_documents(bible_csv):
    return list(read_bible_documents(CorpusCounts(), bible_csv))


def run_pipeline(documents, tokenizer, output_dir, **kwargs):
    written_as = {name: kwargs.pop(name) for name in ("shard_size_mb", "names", "gzip") if name in kwargs}
    options = InstanceOptions(**{"dupe_factor": 1, **kwargs.pop("options", {}), **written_as})
    counts = CorpusCounts()
    output_files = [os.path.join(output_dir, f"part-{i}.tfrecord") for i in range(kwargs.pop("num_files", 2))]
    summary = create_pretraining_data(iter(documents), tokenizer, output_files, options, counts=counts,
                                      progress=False, **kwargs)
    return summary, output_files


def test_truncate_seq_pair_hand_computed():
    # A has 6 tokens, B 3, room for 5: A, A, A (longer), then B on the tie. Draws < 0.5 cut the front.
    room_for_5 = SentencePairRules(max_seq_length=8)
    a, b = [0, 6], [10, 13]
    rng = ScriptedRng(randoms=[0.1, 0.9, 0.2, 0.7])
    truncate_seq_pair(a, b, room_for_5, rng)
    assert (a, b, rng.randoms) == ([2, 5], [10, 12], [])
    # Equal lengths: B first, then A.
    a, b = [0, 3], [5, 8]
    truncate_seq_pair(a, b, SentencePairRules(max_seq_length=7), ScriptedRng(randoms=[0.3, 0.6]))
    assert (a, b) == ([0, 2], [6, 8])
    # Within the limit: nothing drawn.
    a, b = [0, 3], [5, 7]
    truncate_seq_pair(a, b, room_for_5, ScriptedRng())
    assert (a, b) == ([0, 3], [5, 7])


def test_put_back_of_unused_sentences_hand_computed():
    # Document 0: sentences 0-3 of 3 tokens; document 1: sentences 4-5. max_num_tokens 8, no short target.
    documents, starts = [(0, 4), (4, 6)], [0, 3, 6, 9, 12, 15, 18]
    rng = ScriptedRng(randoms=[0.5, 0.2, 0.7, 0.8, 0.4], randints=[1, 1, 0, 2])
    spans = instances_from_document(documents, 0, starts, SentencePairRules(max_seq_length=11), rng)
    # Chunk = sentences 0-2 (9 >= 8 tokens), a_end 1, random next from document 1 (sentences 4, 5 fill B's 5),
    # B trimmed at the back to 5; sentences 1 and 2 are put back, so the next chunk is 1-3: A = 1-2, actual next
    # B = 3, A trimmed at the front.
    assert spans == [PairSpan(0, 3, 12, 17, True, False), PairSpan(4, 9, 9, 12, False, False)]
    assert rng.randoms == [] and rng.randints == []


def original_instances(all_documents, max_seq_length, short_seq_prob, dupe_factor, rng):
    """The original create_training_instances / create_instances_from_document on token lists (without the
    masking), written out as the original does it, to check the span version line by line."""
    rng.shuffle(all_documents)
    max_num_tokens = max_seq_length - 3
    out = []
    for _ in range(dupe_factor):
        for document_index, document in enumerate(all_documents):
            target = max_num_tokens
            if rng.random() < short_seq_prob:
                target = rng.randint(2, max_num_tokens)
            chunk, length, i = [], 0, 0
            while i < len(document):
                chunk.append(document[i])
                length += len(document[i])
                if i == len(document) - 1 or length >= target:
                    a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                    tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
                    tokens_b = []
                    if len(chunk) == 1 or rng.random() < 0.5:
                        is_random_next = True
                        for _ in range(10):
                            random_index = rng.randint(0, len(all_documents) - 1)
                            if random_index != document_index:
                                break
                        random_document = all_documents[random_index]
                        for j in range(rng.randint(0, len(random_document) - 1), len(random_document)):
                            tokens_b.extend(random_document[j])
                            if len(tokens_b) >= target - len(tokens_a):
                                break
                        i -= len(chunk) - a_end
                    else:
                        is_random_next = False
                        tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
                    while len(tokens_a) + len(tokens_b) > max_num_tokens:
                        trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
                        if rng.random() < 0.5:
                            del trunc[0]
                        else:
                            trunc.pop()
                    out.append((tokens_a, tokens_b, is_random_next))
                    chunk, length = [], 0
                i += 1
    return out


@pytest.mark.parametrize("max_seq_length,short_seq_prob,seed", [(128, 0.1, 1), (32, 0.5, 2), (512, 0.1, 3)])
def test_span_algorithm_equals_the_original_on_real_documents(bible_documents, tokenizer, max_seq_length,
                                                              short_seq_prob, seed):
    shard = TokenizedShard.from_documents(0, bible_documents[:150], tokenizer, CorpusCounts())
    options = InstanceOptions(max_seq_length=max_seq_length, short_seq_prob=short_seq_prob, dupe_factor=2)
    spans = pair_spans(shard, options, random.Random(seed))
    ids, starts, doc_splits = shard.token_ids.tolist(), shard.sentence_splits, shard.document_splits
    documents = [[ids[starts[s]:starts[s + 1]] for s in range(doc_splits[d], doc_splits[d + 1])]
                 for d in range(shard.num_documents)]
    want = original_instances(documents, max_seq_length, short_seq_prob, 2, random.Random(seed))
    got = [(ids[a0:a1], ids[b0:b1], bool(random_next)) for a0, a1, b0, b1, random_next, _ in spans.tolist()]
    assert len(got) == len(want) > 1000
    assert got == want


@pytest.fixture(scope="module")
def bible_run(bible_documents, tokenizer, tmp_path_factory):
    """About 11k instances of the whole Bible (dupe_factor 1) from 2 worker processes, read back."""
    summary, files = run_pipeline(bible_documents, tokenizer, tmp_path_factory.mktemp("bible"), num_workers=2)
    return summary, files, concatenate(read_records(files))


def test_statistics_on_real_text_match_the_recipe(bible_run, tokenizer):
    summary, _, records = bible_run
    stats = summary.statistics
    n = stats.instances
    assert n == len(records["input_ids"]) == sum(summary.records_per_file) > 10_000
    lengths = records["input_mask"].sum(axis=1)
    counts = records["masked_lm_weights"].sum(axis=1).astype(int)
    # num_to_predict = min(20, max(1, round(length * 0.15))) exactly, and 15% +/- 0.5% of all tokens.
    assert counts.tolist() == [min(20, max(1, round(int(length) * 0.15))) for length in lengths]
    assert abs(counts.sum() / lengths.sum() - 0.15) < 0.005
    # 80 / 10 / 10.
    shown = np.take_along_axis(records["input_ids"], records["masked_lm_positions"], axis=1)
    real = records["masked_lm_weights"] > 0
    mask_share = np.mean(shown[real] == tokenizer.vocabulary.mask_id)
    kept_share = np.mean(shown[real] == records["masked_lm_ids"][real])
    assert abs(mask_share - 0.8) < 0.015 and abs(kept_share - 0.1) < 0.015
    assert abs(1 - mask_share - kept_share - 0.1) < 0.015
    assert (stats.masked, stats.kept, stats.replaced) == (np.sum(shown[real] == tokenizer.vocabulary.mask_id),
                                                          np.sum(shown[real] == records["masked_lm_ids"][real]),
                                                          real.sum() - stats.masked - stats.kept)
    # NSP: 50% random next plus half of the one-sentence chunks, which are always random next.
    random_next = records["next_sentence_labels"].mean()
    single = stats.one_sentence_chunks / n
    assert 0.05 < single < 0.2
    assert abs(random_next - InstanceOptions().pair_rules.expected_random_next_share(single)) < 0.015
    # Lengths within bounds; the short_seq_prob targets give shorter instances.
    assert lengths.min() >= 5 and lengths.max() == 128
    assert 0.05 < np.mean(lengths < 100) < 0.4


def test_structure_no_special_token_masked_segments_as_specified(bible_run, tokenizer):
    _, _, records = bible_run
    problems = structure_problems(records, tokenizer.vocabulary.cls_id, tokenizer.vocabulary.sep_id)
    assert problems == {rule: 0 for rule in problems}
    real = records["masked_lm_weights"] > 0
    assert not np.isin(records["masked_lm_ids"][real], [tokenizer.vocabulary.cls_id, tokenizer.vocabulary.sep_id,
                                                        tokenizer.vocabulary.pad_id]).any()
    # Segment ids by hand on the first record: 0 for [CLS] A [SEP], 1 for B [SEP], 0 for padding.
    ids, segments, length = records["input_ids"][0], records["segment_ids"][0], records["input_mask"][0].sum()
    first_sep = list(ids).index(tokenizer.vocabulary.sep_id)
    assert segments.tolist() == [0] * (first_sep + 1) + [1] * (length - first_sep - 1) + [0] * (128 - length)


# The original run_pretraining.py's `name_to_features`, copied literally (not derived from this package's spec).
ORIGINAL_NAME_TO_FEATURES = {
    "input_ids": tf.io.FixedLenFeature([128], tf.int64),
    "input_mask": tf.io.FixedLenFeature([128], tf.int64),
    "segment_ids": tf.io.FixedLenFeature([128], tf.int64),
    "masked_lm_positions": tf.io.FixedLenFeature([20], tf.int64),
    "masked_lm_ids": tf.io.FixedLenFeature([20], tf.int64),
    "masked_lm_weights": tf.io.FixedLenFeature([20], tf.float32),
    "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
}


def test_records_parse_with_exactly_the_original_feature_spec(bible_run):
    _, files, _ = bible_run
    assert feature_spec(128, 20) == ORIGINAL_NAME_TO_FEATURES
    spec = ORIGINAL_NAME_TO_FEATURES
    for serialized in tf.data.TFRecordDataset(files[0]).take(50):
        assert set(tf.train.Example.FromString(serialized.numpy()).features.feature) == set(spec)
        parsed = tf.io.parse_single_example(serialized, spec)
        assert {name: (value.dtype, value.shape.as_list()) for name, value in parsed.items()} == {
            name: (f.dtype, f.shape) for name, f in spec.items()}


def test_whole_word_masking_keeps_groups_intact(bible_documents, tokenizer, tmp_path):
    summary, files = run_pipeline(bible_documents[:150], tokenizer, tmp_path, num_workers=0,
                                  options={"do_whole_word_mask": True, "random_seed": 5})
    records = concatenate(read_records(files))
    rules = StaticMasker.for_vocabulary(MaskingRules(0.15, 20, do_whole_word_mask=True), tokenizer.vocabulary)
    pieces_masked = 0
    for i in range(len(records["input_ids"])):
        count = int(records["masked_lm_weights"][i].sum())
        positions = records["masked_lm_positions"][i, :count]
        original = records["input_ids"][i, :records["input_mask"][i].sum()].copy()
        original[positions] = records["masked_lm_ids"][i, :count]
        chosen = set(positions.tolist())
        for group in rules.candidate_groups(original.tolist()):
            assert set(group) <= chosen or not set(group) & chosen, (i, group, sorted(chosen))
        assert count <= min(20, max(1, round(len(original) * 0.15)))
        pieces_masked += int(tokenizer.vocabulary.is_subword[records["masked_lm_ids"][i, :count]].sum())
    assert pieces_masked > 100  # multi-piece words were masked, so the check above had something to check
    assert abs(summary.statistics.predictions / summary.statistics.tokens - 0.15) < 0.01


def test_same_seed_same_bytes_for_any_worker_count_other_seed_differs(bible_documents, tokenizer, tmp_path):
    documents = bible_documents[:200]
    outputs = {}
    for name, kwargs in {"w0": {"num_workers": 0}, "w2": {"num_workers": 2}, "w3": {"num_workers": 3},
                         "seed": {"num_workers": 2, "options": {"random_seed": 99}}}.items():
        os.makedirs(tmp_path / name)
        _, files = run_pipeline(documents, tokenizer, tmp_path / name, shard_size_mb=0.1,
                                **{"options": {"dupe_factor": 2}, **kwargs})
        outputs[name] = [open(f, "rb").read() for f in files]
    assert outputs["w0"] == outputs["w2"] == outputs["w3"]
    assert outputs["seed"] != outputs["w0"] and len(outputs["seed"][0]) > 100_000


def test_v2_names_and_gzip(bible_documents, tokenizer, tmp_path):
    _, files = run_pipeline(bible_documents[:20], tokenizer, tmp_path, num_workers=0, names="v2", gzip=True,
                            num_files=1, options={"max_seq_length": 64, "max_predictions_per_seq": 10})
    assert open(files[0], "rb").read(2) == b"\x1f\x8b"
    spec = feature_spec(64, 10, names="v2")
    dataset = tf.data.TFRecordDataset(files, compression_type="GZIP").map(lambda r: tf.io.parse_single_example(r, spec))
    first = next(iter(dataset))
    assert "input_word_ids" in first and "input_type_ids" in first and first["input_word_ids"].shape == [64]
    records = concatenate(read_records(files))  # the reader finds the schema and the compression itself
    assert records["input_ids"].shape[1] == 64 and records["masked_lm_positions"].shape[1] == 10


def test_example_encoder_bytes_are_protobufs():
    rng = np.random.default_rng(0)
    arrays = {"ids": rng.integers(0, 30522, (50, 16)), "small": rng.integers(0, 2, (50, 16)),
              "big": rng.integers(0, 2**40, (50, 3)), "floats": rng.random((50, 4)).astype(np.float32),
              "one": np.zeros((50, 1), np.int64)}
    records = ExampleEncoder([(name, name == "floats") for name in arrays]).encode(arrays)
    for i, record in enumerate(records):
        want = tf.train.Example(features=tf.train.Features(feature={
            name: tf.train.Feature(float_list=tf.train.FloatList(value=v[i])) if name == "floats"
            else tf.train.Feature(int64_list=tf.train.Int64List(value=v[i])) for name, v in arrays.items()}))
        assert tf.train.Example.FromString(record) == want
    with pytest.raises(ValueError, match="non-negative"):
        ExampleEncoder([("x", False)]).encode({"x": np.array([[-1]])})


def test_round_robin_writer_and_output_patterns(tmp_path):
    assert expand_output_files(f"{tmp_path}/d/t.tfrecord@3")[-1] == f"{tmp_path}/d/t.tfrecord-00002-of-00003"
    paths = expand_output_files(",".join(str(tmp_path / f"{c}.tfrecord") for c in "abc"))
    with RoundRobinWriter(paths) as writer:
        for k in range(7):
            writer.write(f"record {k}".encode())
    assert writer.records_per_file == [3, 2, 2]
    assert [r.numpy() for r in tf.data.TFRecordDataset(paths[1])] == [b"record 1", b"record 4"]
    for bad, message in (("a.tfrecord,a.tfrecord", "names a file twice"), ("x@0", "N >= 1"), (" ,", "names no file")):
        with pytest.raises(ValueError, match=message):
            expand_output_files(bad)


@pytest.mark.parametrize("kwargs,message", [
    ({"max_seq_length": 128, "max_predictions_per_seq": 129}, "max_predictions_per_seq=129 must lie in"),
    ({"max_seq_length": 4}, "max_seq_length=4 is too short"),
    ({"masked_lm_prob": 0.0}, "masked_lm_prob=0.0 must lie in"),
    ({"short_seq_prob": 1.5}, "short_seq_prob=1.5"),
    ({"dupe_factor": 0}, "dupe_factor=0 must be at least 1"),
])
def test_bad_options_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        InstanceOptions(**kwargs)


def test_bad_pipeline_arguments(tokenizer, tmp_path):
    with pytest.raises(ValueError, match="num_workers=-1"):
        run_pipeline([["A."]], tokenizer, tmp_path, num_workers=-1)
    with pytest.raises(ValueError, match="shard_size_mb=0"):
        run_pipeline([["A."]], tokenizer, tmp_path, shard_size_mb=0)


def cli(*args):
    return run_cli("create_pretraining_data", *args)


def test_cli_errors_are_one_clear_line(tmp_path, uncased_vocab):
    missing = cli(f"--input_file={tmp_path}/nothing*.txt", f"--output_file={tmp_path}/o.tfrecord",
                  f"--vocab_file={uncased_vocab}")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines()[-1] == (
        f"bert-create-pretraining-data: error: input_file pattern '{tmp_path}/nothing*.txt' matches no file: check "
        f"the path (globs are expanded here, so quote them in the shell).")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n")
    no_mask = cli(f"--input_file={vocab}", f"--output_file={tmp_path}/o.tfrecord", f"--vocab_file={vocab}",
                  "--max_predictions_per_seq=20")
    assert no_mask.returncode == 2 and "lacks the special token(s) ['[MASK]']" in no_mask.stderr.splitlines()[-1]


def test_cli_end_to_end_on_a_prepared_tfds_dataset(tmp_path, uncased_vocab):
    """A fresh process finds the TFDS dataset from its files alone (its builder code is not importable there)."""
    from test_corpus import TFDS_TEXTS, BertTfTinyTexts
    BertTfTinyTexts(data_dir=str(tmp_path / "tfds")).download_and_prepare()
    done = cli("--input_format=tfds", "--tfds_name=bert_tf_tiny_texts", f"--tfds_data_dir={tmp_path / 'tfds'}",
               f"--output_file={tmp_path}/out/train.tfrecord@2", f"--vocab_file={uncased_vocab}",
               "--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=3", "--num_workers=2",
               "--names=v2", "--gzip")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "corpus: 3 documents, 6 sentences" in done.stdout
    records = concatenate(read_records([f"{tmp_path}/out/train.tfrecord-0000{i}-of-00002" for i in (0, 1)]))
    assert records["input_ids"].shape[1] == 32 and len(records["input_ids"]) >= 3 * len(TFDS_TEXTS)
    assert f"instances: {len(records['input_ids'])}" in done.stdout


def test_reader_schema_inference(bible_run):
    _, files, _ = bible_run
    first = next(read_records(files[:1], batch_size=4, max_records=4))
    assert first["input_ids"].shape == (4, 128) and first["masked_lm_weights"].dtype == np.float32
    explicit = next(read_records(files[:1], RecordSchema.standard("v1", 128, 20), batch_size=4, max_records=4))
    assert all(np.array_equal(first[k], explicit[k]) for k in first)


def test_an_output_that_is_an_input_is_refused_by_real_path(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Jesus wept.\n")
    (tmp_path / "link.txt").symlink_to(corpus)
    with pytest.raises(InputError, match=r"output_file '.*link.txt' is an input file too"):
        check_outputs_spare_inputs([str(tmp_path / "link.txt")], [str(corpus)])
    with pytest.raises(InputError, match="destroy the vocab file"):
        check_outputs_spare_inputs([f"{tmp_path}/sub/../corpus.txt"], [str(corpus)], "the vocab file")
    check_outputs_spare_inputs([str(tmp_path / "train.tfrecord")], [str(corpus)])


def test_outputs_appear_complete_or_not_at_all(bible_documents, tokenizer, tmp_path):
    def failing(documents):
        yield from documents
        raise OSError("the disk went away")

    files = [str(tmp_path / f"part-{i}.tfrecord") for i in range(2)]
    with pytest.raises(OSError, match="disk went away"):
        create_pretraining_data(failing(bible_documents[:40]), tokenizer, files,
                                InstanceOptions(dupe_factor=1, shard_size_mb=0.01), num_workers=0, progress=False)
    assert os.listdir(tmp_path) == []  # neither the outputs nor their partial files
    with pytest.raises(InputError, match="gave no training instance"):
        create_pretraining_data(iter([[], ["\x00"]]), tokenizer, files, InstanceOptions(), num_workers=0,
                                progress=False)
    assert os.listdir(tmp_path) == []


def test_a_stop_request_keeps_the_complete_shards(bible_documents, tokenizer, tmp_path):
    stop = threading.Event()

    def documents():
        for index, document in enumerate(bible_documents[:60]):
            if index == 25:
                stop.set()  # as the SIGTERM handler does, while the third shard is being read
            yield document

    files = [str(tmp_path / f"part-{i}.tfrecord") for i in range(2)]
    summary = create_pretraining_data(documents(), tokenizer, files, InstanceOptions(dupe_factor=1, shard_size_mb=0.02),
                                      num_workers=0, progress=False, stop=stop)
    assert summary.stopped and 1 <= summary.shards < 5
    records = concatenate(read_records(files))
    assert len(records["input_ids"]) == summary.statistics.instances == sum(summary.records_per_file)
    assert sorted(os.listdir(tmp_path)) == ["part-0.tfrecord", "part-1.tfrecord"]


def test_sigterm_stops_at_a_shard_boundary_with_complete_files_and_exit_143(tmp_path, uncased_vocab):
    output = tmp_path / "train.tfrecord"
    process = start_cli("create_pretraining_data", "--input_format=bible", f"--output_file={output}",
                        f"--vocab_file={uncased_vocab}", "--dupe_factor=1", "--num_workers=1", "--shard_size_mb=0.05",
                        "--noprogress")
    partial = tmp_path / f"train.tfrecord.partial-{process.pid}"
    deadline = time.time() + 120
    while not (partial.exists() and partial.stat().st_size > 0) and time.time() < deadline:
        time.sleep(0.2)
    assert partial.exists(), "the run wrote nothing within 120 s"
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr[-3000:]
    assert "stopped on request after" in stdout and os.listdir(tmp_path) == ["train.tfrecord"]
    records = concatenate(read_records([str(output)]))  # every record reads: no file cut mid-record
    assert f"wrote {len(records['input_ids'])} records" in stdout and len(records["input_ids"]) > 0
    # A hard kill leaves the output path untouched (only a partial file).
    killed = start_cli("create_pretraining_data", "--input_format=bible", f"--output_file={tmp_path}/k",
                       f"--vocab_file={uncased_vocab}", "--dupe_factor=1", "--num_workers=0", "--noprogress",
                       output=subprocess.DEVNULL)
    while not (tmp_path / f"k.partial-{killed.pid}").exists() and time.time() < deadline + 60:
        time.sleep(0.2)
    killed.kill()
    killed.wait()
    assert not (tmp_path / "k").exists()

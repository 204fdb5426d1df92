"""The Beam pipeline (DirectRunner) makes the same records as the local pipeline from one input file."""

import glob
import os

import pytest

beam = pytest.importorskip(
    "apache_beam", reason="apache-beam is the optional extra bert_tf[beam]; its releases pin protobuf < 7, so it is "
                          "installed only where Beam runs (see bert_tf/instances/beam_pipeline.py)")

from apache_beam.metrics.metric import MetricsFilter  # noqa: E402

from bert_tf.instances.beam_pipeline import build_pipeline  # noqa: E402
from bert_tf.instances.options import InstanceOptions  # noqa: E402
from bert_tf.instances.pipeline import create_pretraining_data  # noqa: E402
from bert_tf.text.bible import read_bible_documents  # noqa: E402
from bert_tf.text.corpus import CorpusCounts, read_documents  # noqa: E402
from bert_tf.text.sentences import split_sentences  # noqa: E402
from bert_tf.text.tokenizer import FullTokenizer  # noqa: E402

# The Beam pipeline over worker processes: the large tier (pytest.ini).
pytestmark = pytest.mark.large


def test_direct_runner_records_equal_the_local_pipeline(tmp_path, uncased_vocab, bible_csv):
    corpus = tmp_path / "corpus.txt"
    chapters = list(read_bible_documents(CorpusCounts(), bible_csv))[:60]
    corpus.write_text("".join("\n".join(chapter) + "\n\n" for chapter in chapters), encoding="utf-8")
    options = InstanceOptions(dupe_factor=2, do_whole_word_mask=True, random_seed=7, shard_size_mb=0.05)

    local_file = str(tmp_path / "local.tfrecord")
    summary = create_pretraining_data(read_documents(str(corpus), "sentences", CorpusCounts()),
                                      FullTokenizer(uncased_vocab), [local_file], options, num_workers=0,
                                      progress=False)
    assert summary.shards > 3

    pipeline = beam.Pipeline(runner="DirectRunner")
    build_pipeline(pipeline, str(corpus), str(tmp_path / "beam" / "train"), uncased_vocab, options,
                   num_output_files=2)
    result = pipeline.run()
    result.wait_until_finish()

    def records(paths):
        import tensorflow as tf
        return sorted(r.numpy() for r in tf.data.TFRecordDataset(paths))

    beam_files = sorted(glob.glob(str(tmp_path / "beam" / "train-*")))
    assert len(beam_files) == 2 and all(os.path.getsize(f) > 0 for f in beam_files)
    local, from_beam = records([local_file]), records(beam_files)
    assert len(local) == summary.statistics.instances > 1000
    assert from_beam == local
    counters = {c.key.metric.name: c.committed
                for c in result.metrics().query(MetricsFilter().with_namespace("instances"))["counters"]}
    assert counters["instances"] == summary.statistics.instances
    assert counters["random_next"] == summary.statistics.random_next


def test_direct_runner_equals_the_local_pipeline_with_a_word_segmenter(tmp_path):
    pytest.importorskip("jieba", reason="jieba is the optional extra bert_tf[chinese]")
    from chinese_text import MADMAN, SPECIALS

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(SPECIALS + sorted({c for c in MADMAN if not c.isspace()})) + "\n", encoding="utf-8")
    corpus = tmp_path / "corpus.txt"
    # Each paragraph's sentences, one a line, as 40 documents: several shards of 0.0008 MB.
    paragraphs = ["\n".join(split_sentences(p)) for p in MADMAN.split("\n\n")]
    corpus.write_text("\n\n".join(paragraphs * 20) + "\n", encoding="utf-8")
    options = InstanceOptions(max_seq_length=32, max_predictions_per_seq=6, dupe_factor=2, do_whole_word_mask=True,
                              word_segmenter="jieba", random_seed=7, shard_size_mb=0.0008)
    local_file = str(tmp_path / "local.tfrecord")
    counts = CorpusCounts()
    summary = create_pretraining_data(read_documents(str(corpus), "sentences", counts), FullTokenizer(str(vocab)),
                                      [local_file], options, num_workers=0, counts=counts, progress=False)
    assert summary.shards > 3 and counts.word_segmented_sentences == 200

    pipeline = beam.Pipeline(runner="DirectRunner")
    build_pipeline(pipeline, str(corpus), str(tmp_path / "beam" / "train"), str(vocab), options, num_output_files=1)
    result = pipeline.run()
    result.wait_until_finish()
    import tensorflow as tf
    local = sorted(r.numpy() for r in tf.data.TFRecordDataset([local_file]))
    beam_files = sorted(glob.glob(str(tmp_path / "beam" / "train-*")))
    from_beam = sorted(r.numpy() for r in tf.data.TFRecordDataset(beam_files))
    assert from_beam == local and b"word_starts" in local[0]
    counters = {c.key.metric.name: c.committed
                for c in result.metrics().query(MetricsFilter().with_namespace("corpus"))["counters"]}
    assert counters["word_segmented_sentences"] == 200 and counters["word_fallback_sentences"] == 0

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

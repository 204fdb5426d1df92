"""The same instance creation as an Apache Beam pipeline, for corpora that outgrow one machine.

Each input file is read into documents and cut into shards of about `shard_size_mb` of text; each shard is
tokenized and turned into serialized records by exactly the code of the local pipeline
(`TokenizedShard.from_documents` + `process_shard`, seeded per shard); records go to TFRecord files through
`WriteToTFRecord`. Runs on the DirectRunner here, on Dataflow, Flink or Spark with their pipeline options.

Differences from the local pipeline: files are read in parallel, so a file's end also ends its document (the
original lets a document run on into the next file), and a shard never spans two files; shard k of file f is
seeded with (random_seed, f * 2**32 + k). For a single input file both pipelines make the same records (tested).
The order of records in the output files is the runner's.

Its command is `python -m bert_tf.cli.create_pretraining_data_beam` (the flags of bert-create-pretraining-data):

    python -m bert_tf.cli.create_pretraining_data_beam --input_file='gs://bucket/wiki/*.txt' \\
        --output_prefix=gs://bucket/records/train --num_output_files=256 --vocab_file=vocab.txt \\
        --dupe_factor=5 --runner=DataflowRunner --project=... --region=... --temp_location=gs://bucket/tmp
"""

import apache_beam as beam
from apache_beam.metrics import Metrics

from bert_tf.errors import InputError
from bert_tf.instances.pipeline import shard_documents
from bert_tf.instances.shard import TokenizedShard, process_shard
from bert_tf.text.corpus import INPUT_FORMATS, CorpusCounts, read_sentence_documents, read_text_documents
from bert_tf.text.file_patterns import expand_file_patterns
from bert_tf.text.tokenizer_settings import TokenizerSettings
from bert_tf.text.vocabulary import SPECIAL_TOKENS
from bert_tf.text.word_segmenter import WordSegmenter

_FILE_SHARD_STRIDE = 2 ** 32  # shard indices of file f start at f * stride
_COUNTED = ("documents", "empty_documents", "one_sentence_documents", "sentences", "empty_sentences", "tokens",
            "word_segmented_sentences", "word_fallback_sentences", "undecodable_lines")


class ReadShards(beam.DoFn):
    """(file index, path) -> (shard index, documents) for consecutive documents of the file."""

    def __init__(self, input_format, shard_size_mb):
        self.input_format = input_format
        self.shard_size_mb = shard_size_mb

    def process(self, element):
        file_index, path = element
        counts = CorpusCounts()
        reader = read_sentence_documents if self.input_format == "sentences" else read_text_documents
        for local_index, documents in enumerate(shard_documents(reader([path], counts), self.shard_size_mb)):
            yield file_index * _FILE_SHARD_STRIDE + local_index, documents
        Metrics.counter("corpus", "undecodable_lines").inc(counts.undecodable_lines)


class ShardToRecords(beam.DoFn):
    """(shard index, documents) -> serialized tf.train.Example records, through the local pipeline's code."""

    def __init__(self, vocab_file, settings, options):
        self.vocab_file = vocab_file
        self.settings = settings
        self.options = options

    def setup(self):
        from bert_tf.text.tokenizer import FullTokenizer  # TensorFlow is imported on the workers only
        self.tokenizer = FullTokenizer(self.vocab_file, self.settings.do_lower_case, self.settings.strip_accents)
        self.vocab = self.tokenizer.vocabulary.require(SPECIAL_TOKENS, "pre-training data", pad_first=True)
        # The workers need the segmenter's extra too (e.g. Dataflow's --extra_package or a requirements file).
        self.segmenter = WordSegmenter(self.options.word_segmenter) if self.options.word_segmenter else None

    def process(self, element):
        index, documents = element
        counts = CorpusCounts()
        shard = TokenizedShard.from_documents(index, documents, self.tokenizer, counts, self.segmenter)
        for name in _COUNTED[:-1]:
            Metrics.counter("corpus", name).inc(getattr(counts, name))
        result = process_shard(shard, self.options, self.vocab)
        Metrics.counter("instances", "instances").inc(result.statistics.instances)
        Metrics.counter("instances", "random_next").inc(result.statistics.random_next)
        Metrics.counter("instances", "predictions").inc(result.statistics.predictions)
        Metrics.counter("instances", "tokens").inc(result.statistics.tokens)
        Metrics.counter("instances", "unknown").inc(result.statistics.unknown)
        yield from result.records


def build_pipeline(pipeline, input_file, output_prefix, vocab_file, options, *, input_format="sentences",
                   settings=None, num_output_files=0):
    """Adds the read -> shard -> instances -> TFRecord steps to `pipeline`; returns the write step's result. The
    `InstanceOptions` `options` also give the shard size, the records' feature names and their compression;
    `settings` (a `TokenizerSettings`) how the text is normalized (default: the vocab's settings file's, else the
    original's uncased normalization).

    Example:
    >>> with beam.Pipeline() as pipeline:  # doctest: +SKIP
    ...     build_pipeline(pipeline, "corpus/*.txt", "out/train", "vocab.txt", InstanceOptions(dupe_factor=5))
    """
    if input_format not in INPUT_FORMATS:
        raise InputError(f"input_format={input_format!r} is unknown: the Beam pipeline reads {INPUT_FORMATS}.")
    files = expand_file_patterns(input_file)
    if options.word_segmenter:
        WordSegmenter(options.word_segmenter)  # refused here, before any worker starts, when it is not installed
    settings = settings or TokenizerSettings.for_vocab(vocab_file)
    types = beam.io.filesystem.CompressionTypes
    compression = types.GZIP if options.gzip else types.UNCOMPRESSED
    return (pipeline
            | "InputFiles" >> beam.Create(list(enumerate(files)))
            | "ReadShards" >> beam.ParDo(ReadShards(input_format, options.shard_size_mb))
            # Shards are independent units of work: spread them over the workers.
            | "Spread" >> beam.Reshuffle()
            | "Instances" >> beam.ParDo(ShardToRecords(vocab_file, settings, options))
            | "Write" >> beam.io.WriteToTFRecord(output_prefix, num_shards=num_output_files,
                                                 compression_type=compression))

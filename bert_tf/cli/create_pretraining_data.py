"""bert-create-pretraining-data: text -> TFRecords of masked-LM / next-sentence instances, the original format.

The original script's flags and algorithm (google-research/bert create_pretraining_data.py, shared/RECIPE.md),
streaming in shards over worker processes. Examples:

  bert-create-pretraining-data --input_file='corpus/*.txt' --output_file=data/train.tfrecord@8 \\
      --vocab_file=vocab.txt --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5 --num_workers=8
  bert-create-pretraining-data --input_format=bible --output_file=data/bible.tfrecord --vocab_file=vocab.txt
"""

from absl import flags

from bert_tf.cli import app

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files and globs).")
flags.DEFINE_enum("input_format", "sentences", ["sentences", "text", "bible", "tfds"],
                  "sentences: one sentence per line, blank lines between documents (the original format); "
                  "text: raw text, a document per file, split into sentences; bible: the embedded World English "
                  "Bible (no --input_file); tfds: a prepared TFDS dataset (--tfds_name, --tfds_data_dir).")
flags.DEFINE_string("tfds_name", None, "TFDS dataset name (with --input_format=tfds), e.g. wikipedia/20230601.en.")
flags.DEFINE_string("tfds_data_dir", None, "Directory the TFDS dataset was prepared into.")
flags.DEFINE_string("tfds_split", "train", "TFDS split to read.")
flags.DEFINE_string("tfds_text_key", "text", "TFDS feature holding a document's text.")
flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files, or PATH@N for "
                                         "N shards).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. Should be True for uncased models "
                                         "and False for cased models.")
flags.DEFINE_bool("do_whole_word_mask", False, "Whether to use whole word masking rather than per-WordPiece "
                                               "masking.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10, "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of creating sequences which are shorter than the maximum "
                                          "length.")
flags.DEFINE_integer("num_workers", None, "Processes building instances (default: the CPU count; 0: in the main "
                                          "process). The output does not depend on it.")
flags.DEFINE_float("shard_size_mb", 0.5, "Text per shard: the unit of shuffling, random-next documents and "
                                         "parallel work. The output depends on it (and on the seed).")
flags.DEFINE_enum("names", "v1", ["v1", "v2"], "Feature names: v1 = input_ids/segment_ids (the original), "
                                               "v2 = input_word_ids/input_type_ids (Model Garden).")
flags.DEFINE_bool("gzip", False, "Write GZIP-compressed TFRecords.")
flags.DEFINE_bool("progress", True, "Show a progress bar (documents, instances) on stderr.")

def read_corpus(counts):
    """The documents the flags name."""
    from bert_tf.text.corpus import read_documents

    if FLAGS.input_format == "bible":
        from bert_tf.text.bible import read_bible_documents
        return read_bible_documents(counts)
    if FLAGS.input_format == "tfds":
        if not FLAGS.tfds_name or not FLAGS.tfds_data_dir:
            raise app.InputError("--input_format=tfds needs --tfds_name and --tfds_data_dir (a prepared dataset).")
        from bert_tf.text.tfds_corpus import read_tfds_documents
        return read_tfds_documents(FLAGS.tfds_name, FLAGS.tfds_data_dir, counts, FLAGS.tfds_split,
                                   FLAGS.tfds_text_key)
    if not FLAGS.input_file:
        raise app.InputError(f"--input_file is required with --input_format={FLAGS.input_format} (or use "
                         f"--input_format=bible for the embedded corpus).")
    return read_documents(FLAGS.input_file, FLAGS.input_format, counts)


def main(argv):
    del argv
    from bert_tf.instances.options import InstanceOptions
    from bert_tf.instances.pipeline import create_pretraining_data
    from bert_tf.records.writer import expand_output_files
    from bert_tf.text.corpus import CorpusCounts
    from bert_tf.text.tokenizer import FullTokenizer

    options = InstanceOptions(
        max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob, dupe_factor=FLAGS.dupe_factor,
        do_whole_word_mask=FLAGS.do_whole_word_mask, random_seed=FLAGS.random_seed)
    output_files = expand_output_files(FLAGS.output_file)
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    counts = CorpusCounts()
    documents = read_corpus(counts)
    summary = create_pretraining_data(documents, tokenizer, output_files, options, num_workers=FLAGS.num_workers,
                                      shard_size_mb=FLAGS.shard_size_mb, names=FLAGS.names, gzip=FLAGS.gzip,
                                      counts=counts, progress=FLAGS.progress)
    print("\n".join(summary.summary_lines(options.masked_lm_prob)), flush=True)


def run():
    app.run(main, required_flags=["output_file", "vocab_file"])


if __name__ == "__main__":
    run()

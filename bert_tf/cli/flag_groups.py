"""Flags that several commands share, each defined once: which corpus a command reads (`bert-vocab`,
`bert-create-pretraining-data`, the Beam pipeline) and how documents become instances
(`bert-create-pretraining-data` and the Beam pipeline), with the original script's names and defaults.

A command calls `define_*` at import time, next to its own flags, and reads them back with `read_corpus` /
`instance_options`. A group already defined in the process (two commands imported by one test) is not defined
again: absl's flags are global to a process.
"""

from absl import flags

from bert_tf.errors import InputError

FLAGS = flags.FLAGS

_FORMAT_HELP = {
    "sentences": "one sentence per line, blank lines between documents (the original format)",
    "text": "raw text, a document per file, split into sentences",
    "bible": "the embedded World English Bible (no --input_file)",
    "tfds": "a prepared TFDS dataset (--tfds_name, --tfds_data_dir)",
}


def define_corpus_flags(formats=("sentences", "text", "bible", "tfds")):
    """--input_file and --input_format with the given formats (and --tfds_* when "tfds" is one of them).

    Example:
    >>> define_corpus_flags(["sentences", "text"])  # doctest: +SKIP
    """
    if "input_file" in FLAGS:
        return
    flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files and globs).")
    flags.DEFINE_enum("input_format", "sentences", list(formats),
                      "; ".join(f"{name}: {_FORMAT_HELP[name]}" for name in formats) + ".")
    if "tfds" in formats:
        flags.DEFINE_string("tfds_name", None, "TFDS dataset name (with --input_format=tfds), e.g. "
                                               "wikipedia/20230601.en.")
        flags.DEFINE_string("tfds_data_dir", None, "Directory the TFDS dataset was prepared into.")
        flags.DEFINE_string("tfds_split", "train", "TFDS split to read.")
        flags.DEFINE_string("tfds_text_key", "text", "TFDS feature holding a document's text.")


def read_corpus(counts):
    """The documents the corpus flags name (an iterator of lists of sentences), counted into `counts`.

    Example:
    >>> documents = read_corpus(CorpusCounts())  # doctest: +SKIP
    """
    from bert_tf.text.corpus import read_documents

    if FLAGS.input_format == "bible":
        from bert_tf.text.bible import read_bible_documents
        return read_bible_documents(counts)
    if FLAGS.input_format == "tfds":
        if not FLAGS.tfds_name or not FLAGS.tfds_data_dir:
            raise InputError("--input_format=tfds needs --tfds_name and --tfds_data_dir (a prepared dataset).")
        from bert_tf.text.tfds_corpus import read_tfds_documents
        return read_tfds_documents(FLAGS.tfds_name, FLAGS.tfds_data_dir, counts, FLAGS.tfds_split,
                                   FLAGS.tfds_text_key)
    if not FLAGS.input_file:
        raise InputError(f"--input_file is required with --input_format={FLAGS.input_format} (or use "
                         f"--input_format=bible for the embedded corpus).")
    return read_documents(FLAGS.input_file, FLAGS.input_format, counts)


def define_instance_flags():
    """The original create_pretraining_data flags (vocab, casing, lengths, masking, seed, duplication) plus the
    shard size, the feature names and compression of the records.

    Example:
    >>> define_instance_flags()  # doctest: +SKIP
    """
    from bert_tf.instances.options import InstanceOptions

    if "max_predictions_per_seq" in FLAGS:
        return
    default = InstanceOptions()
    flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
    flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. Should be True for uncased "
                                             "models and False for cased models.")
    flags.DEFINE_bool("do_whole_word_mask", default.do_whole_word_mask, "Whether to use whole word masking rather "
                                                                        "than per-WordPiece masking.")
    flags.DEFINE_integer("max_seq_length", default.max_seq_length, "Maximum sequence length.")
    flags.DEFINE_integer("max_predictions_per_seq", default.max_predictions_per_seq,
                         "Maximum number of masked LM predictions per sequence.")
    flags.DEFINE_integer("random_seed", default.random_seed, "Random seed for data generation.")
    flags.DEFINE_integer("dupe_factor", default.dupe_factor, "Number of times to duplicate the input data (with "
                                                             "different masks).")
    flags.DEFINE_float("masked_lm_prob", default.masked_lm_prob, "Masked LM probability.")
    flags.DEFINE_float("short_seq_prob", default.short_seq_prob, "Probability of creating sequences which are "
                                                                 "shorter than the maximum length.")
    flags.DEFINE_float("shard_size_mb", default.shard_size_mb,
                       "Text per shard: the unit of shuffling, random-next documents and "
                       "parallel work. The output depends on it (and on the seed).")
    flags.DEFINE_enum("names", default.names, ["v1", "v2"],
                      "Feature names: v1 = input_ids/segment_ids (the original), v2 = input_word_ids/input_type_ids "
                      "(Model Garden).")
    flags.DEFINE_bool("gzip", default.gzip, "Write GZIP-compressed TFRecords.")
    flags.DEFINE_bool("pack", default.pack, "Write packed rows: up to --max_instances_per_row instances per record, "
                                            "each whole, attention kept within each (docs/record_format.md). Not "
                                            "in the original.")
    flags.DEFINE_integer("max_instances_per_row", default.max_instances_per_row,
                         "With --pack: instances per row at most (Krell et al. use 3).")
    flags.DEFINE_integer("max_predictions_per_row", None,
                         "With --pack: masked-LM slots per row, shared by its instances (default: "
                         "ceil(max_seq_length * masked_lm_prob) + max_instances_per_row, enough for any row).")


def instance_options():
    """The `InstanceOptions` the instance flags give.

    Example:
    >>> instance_options().max_seq_length  # doctest: +SKIP
    128
    """
    from bert_tf.instances.options import InstanceOptions

    return InstanceOptions(
        max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob, dupe_factor=FLAGS.dupe_factor,
        do_whole_word_mask=FLAGS.do_whole_word_mask, random_seed=FLAGS.random_seed, pack=FLAGS.pack,
        max_instances_per_row=FLAGS.max_instances_per_row, max_predictions_per_row=FLAGS.max_predictions_per_row,
        shard_size_mb=FLAGS.shard_size_mb, names=FLAGS.names, gzip=FLAGS.gzip)

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
    shard size, the feature names and compression of the records: the vocab and casing here, the others generated
    from `InstanceOptions`' fields (their helps and defaults).

    Example:
    >>> define_instance_flags()  # doctest: +SKIP
    """
    from bert_tf.cli.config_flags import define_config_flags
    from bert_tf.instances.options import InstanceOptions

    if "max_predictions_per_seq" in FLAGS:
        return
    flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
    flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. Should be True for uncased "
                                             "models and False for cased models.")
    define_config_flags(InstanceOptions, __name__, with_defaults=True)


def instance_options():
    """The `InstanceOptions` the instance flags give (each flag's default is its field's).

    Example:
    >>> instance_options().max_seq_length  # doctest: +SKIP
    128
    """
    from bert_tf.config_schema import config_flags
    from bert_tf.instances.options import InstanceOptions

    return InstanceOptions(**{flag.path: FLAGS[flag.name].value for flag in config_flags(InstanceOptions)})

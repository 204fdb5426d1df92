"""bert-create-pretraining-data: text -> TFRecords of masked-LM / next-sentence instances, the original format.

The original script's flags and algorithm (google-research/bert create_pretraining_data.py, docs/original_recipe.md),
streaming in shards over worker processes. Examples:

  bert-create-pretraining-data --input_file='corpus/*.txt' --output_file=data/train.tfrecord@8 \\
      --vocab_file=vocab.txt --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5 --num_workers=8
  bert-create-pretraining-data --input_format=bible --output_file=data/bible.tfrecord --vocab_file=vocab.txt
"""

import signal
import threading

from absl import flags

from bert_tf.cli import app, flag_groups
from bert_tf.cli.exit_codes import EXIT_OK, EXIT_PREEMPTED

FLAGS = flags.FLAGS

flag_groups.define_corpus_flags()
flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files, or PATH@N for "
                                         "N shards).")
flag_groups.define_instance_flags()
flags.DEFINE_integer("num_workers", None, "Processes building instances (default: the CPU count; 0: in the main "
                                          "process). The output does not depend on it.")
flags.DEFINE_bool("progress", True, "Show a progress bar (documents, instances) on stderr.")

# --help's groups, by purpose (`bert_tf.cli.flag_parsing.command_help`).
HELP_GROUPS = {
    "text in, records out": ["input_file", "input_format", "vocab_file", "do_lower_case", "output_file"],
    "the original algorithm": ["max_seq_length", "max_predictions_per_seq", "masked_lm_prob", "short_seq_prob",
                               "dupe_factor", "do_whole_word_mask", "random_seed"],
    "packed rows (several instances per record)": ["pack", "max_instances_per_row", "max_predictions_per_row"],
    "TFDS input": ["tfds_name", "tfds_data_dir", "tfds_split", "tfds_text_key"],
    "how it runs": ["num_workers", "shard_size_mb", "names", "gzip", "progress"],
}


def main(argv):
    del argv
    from bert_tf.atomic_output import check_output_file
    from bert_tf.instances.pipeline import create_pretraining_data
    from bert_tf.records.writer import check_outputs_spare_inputs, expand_output_files
    from bert_tf.text.corpus import CorpusCounts
    from bert_tf.text.file_patterns import expand_file_patterns
    from bert_tf.text.tokenizer import FullTokenizer

    options = flag_groups.instance_options()
    output_files = expand_output_files(FLAGS.output_file)
    for path in output_files:  # before the worker processes start: a refused output ends the run with nothing done
        check_output_file(path)
    if FLAGS.input_format in ("sentences", "text") and FLAGS.input_file:
        check_outputs_spare_inputs(output_files, expand_file_patterns(FLAGS.input_file), "an input corpus file")
    check_outputs_spare_inputs(output_files, [FLAGS.vocab_file], "the vocab file")
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    counts = CorpusCounts()
    documents = flag_groups.read_corpus(counts)
    # SIGTERM (preemption): finish the shard being written, complete the files, exit 143.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    summary = create_pretraining_data(documents, tokenizer, output_files, options, num_workers=FLAGS.num_workers,
                                      counts=counts, progress=FLAGS.progress, stop=stop)
    print("\n".join(summary.summary_lines(options)), flush=True)
    return EXIT_PREEMPTED if summary.stopped else EXIT_OK


def run():
    app.run(main, required_flags=["output_file", "vocab_file"])


if __name__ == "__main__":
    run()

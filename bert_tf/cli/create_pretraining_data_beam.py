"""The Beam pipeline of instance creation (`bert_tf.instances.beam_pipeline`) as a command, for corpora that outgrow
one machine: the flags of `bert-create-pretraining-data` (the same definitions), records written as
PREFIX-SSSSS-of-NNNNN, and every flag it does not know passed on to Beam as a pipeline option (--runner, --project,
--region, --temp_location, ...).

    python -m bert_tf.cli.create_pretraining_data_beam --input_file='gs://bucket/wiki/*.txt' \\
        --output_prefix=gs://bucket/records/train --num_output_files=256 --vocab_file=vocab.txt \\
        --dupe_factor=5 --runner=DataflowRunner --project=... --region=... --temp_location=gs://bucket/tmp
"""

from absl import flags

from bert_tf.cli import app, flag_groups
from bert_tf.text.corpus import INPUT_FORMATS

FLAGS = flags.FLAGS

flag_groups.define_corpus_flags(INPUT_FORMATS)  # the files Beam reads in parallel
flags.DEFINE_string("output_prefix", None, "Output files are PREFIX-SSSSS-of-NNNNN.")
flags.DEFINE_integer("num_output_files", 0, "Output files (0: the runner decides).")
flag_groups.define_instance_flags()


def main(argv):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from bert_tf.instances.beam_pipeline import build_pipeline

    if not FLAGS.input_file:
        raise app.InputError("--input_file is required: the files to read (comma-separated globs).")
    options = flag_groups.instance_options()
    with beam.Pipeline(options=PipelineOptions(argv[1:])) as pipeline:
        build_pipeline(pipeline, FLAGS.input_file, FLAGS.output_prefix, FLAGS.vocab_file, options,
                       input_format=FLAGS.input_format, do_lower_case=FLAGS.do_lower_case,
                       shard_size_mb=FLAGS.shard_size_mb, names=FLAGS.names, gzip=FLAGS.gzip,
                       num_output_files=FLAGS.num_output_files)


def run():
    app.run(main, required_flags=["output_prefix", "vocab_file"], pass_on_unknown_flags=True)


if __name__ == "__main__":
    run()

"""bert-create-pretraining-data-beam: the Beam pipeline of instance creation (`bert_tf.instances.beam_pipeline`), for
corpora that outgrow one machine: the flags of `bert-create-pretraining-data` (the same definitions), records written
as PREFIX-SSSSS-of-NNNNN, and every flag it does not know passed on to Beam as a pipeline option (--runner,
--project, --region, --temp_location, ...). README.md ("Corpus-scale data") has the commands for each runner.

    bert-create-pretraining-data-beam --input_file='gs://bucket/wiki/*.txt' \\
        --output_prefix=gs://bucket/records/train --num_output_files=256 --vocab_file=vocab.txt \\
        --dupe_factor=5 --runner=DataflowRunner --project=... --region=... --temp_location=gs://bucket/tmp

Like the other commands it prints one line naming its devices, then its summary; what Beam and its workers print
(TensorFlow's start-up lines in every worker, the runner's logs) is hidden unless the run fails and
--verbosity=debug is given, or BERT_TF_TF_LOGS=1.
"""

from absl import flags

from bert_tf.cli import app, flag_groups
from bert_tf.cli.quiet_tensorflow import others_output_hidden
from bert_tf.errors import InputError
from bert_tf.text.corpus import INPUT_FORMATS

FLAGS = flags.FLAGS

flag_groups.define_corpus_flags(INPUT_FORMATS)  # the files Beam reads in parallel
flags.DEFINE_string("output_prefix", None, "Output files are PREFIX-SSSSS-of-NNNNN.")
flags.DEFINE_integer("num_output_files", 0, "Output files (0: the runner decides).")
flag_groups.define_instance_flags()


def main(argv):
    from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary

    if not FLAGS.input_file:
        raise InputError("--input_file is required: the files to read (comma-separated globs).")
    options = flag_groups.instance_options()
    # Checked here, where it ends in one line; on a worker it would end the pipeline with the worker's traceback.
    Vocabulary.from_file(FLAGS.vocab_file).require(SPECIAL_TOKENS, "pre-training data", pad_first=True)
    with others_output_hidden():
        import apache_beam as beam
        from apache_beam.metrics.metric import MetricsFilter
        from apache_beam.options.pipeline_options import PipelineOptions

        from bert_tf.instances.beam_pipeline import build_pipeline

        pipeline = beam.Pipeline(options=PipelineOptions(argv[1:]))
        build_pipeline(pipeline, FLAGS.input_file, FLAGS.output_prefix, FLAGS.vocab_file, options,
                       input_format=FLAGS.input_format, do_lower_case=FLAGS.do_lower_case,
                       num_output_files=FLAGS.num_output_files)
        result = pipeline.run()
        result.wait_until_finish()
        counters = {counter.key.metric.name: counter.committed for counter in
                    result.metrics().query(MetricsFilter().with_namespace("instances"))["counters"]}
    print(f"wrote {counters.get('instances', 0)} instances ({counters.get('random_next', 0)} with a random next "
          f"sentence) to {FLAGS.output_prefix}-*-of-*", flush=True)


def run():
    app.run(main, required_flags=["output_prefix", "vocab_file"], pass_on_unknown_flags=True)


if __name__ == "__main__":
    run()

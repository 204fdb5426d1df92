"""bert-create-pretraining-data-beam: the Beam pipeline of instance creation (`bert_tf.instances.beam_pipeline`), for
corpora that outgrow one machine: the flags of `bert-create-pretraining-data` (the same fields), records written
as PREFIX-SSSSS-of-NNNNN, and every flag it does not know passed on to Beam as a pipeline option (--runner,
--project, --region, --temp_location, ...). README.md ("Corpus-scale data") has the commands for each runner.

    bert-create-pretraining-data-beam --input_file='gs://bucket/wiki/*.txt' \\
        --output_prefix=gs://bucket/records/train --num_output_files=256 --vocab_file=vocab.txt \\
        --dupe_factor=5 --runner=DataflowRunner --project=... --region=... --temp_location=gs://bucket/tmp

Like the other commands it prints one line naming its devices, then its summary; what Beam and its workers print
(TensorFlow's start-up lines in every worker, the runner's logs) is hidden unless the run fails and
--verbosity=debug is given, or BERT_TF_TF_LOGS=1.
"""

import dataclasses
import typing
from typing import Optional

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.cli.create_pretraining_data import TEXT_IN_RECORDS_OUT, VOCAB_FILE_HELP
from bert_tf.cli.quiet_tensorflow import others_output_hidden
from bert_tf.config_schema import Section, field_option
from bert_tf.instances.options import InstanceOptions
from bert_tf.text.corpus_spec import FileCorpus
from bert_tf.text.tokenizer_settings import DO_LOWER_CASE_HELP, STRIP_ACCENTS_HELP, TokenizerSettings


@dataclasses.dataclass(frozen=True)
class BeamPipelineConfig(Section):
    """What the Beam pipeline reads (files Beam reads in parallel), how it makes instances and where it writes
    them; `pipeline_args` are the flags passed on to Beam.

    Example:
    >>> BeamPipelineConfig(output_prefix="records/train", num_output_files=8).num_output_files
    8
    """

    HELP_GROUP = TEXT_IN_RECORDS_OUT
    UNKNOWN_FLAGS_FIELD = "pipeline_args"
    corpus: FileCorpus = FileCorpus()
    vocab_file: Optional[str] = field_option(None, VOCAB_FILE_HELP)
    do_lower_case: Optional[bool] = field_option(None, DO_LOWER_CASE_HELP)
    strip_accents: Optional[bool] = field_option(None, STRIP_ACCENTS_HELP)
    output_prefix: Optional[str] = field_option(None, "Output files are PREFIX-SSSSS-of-NNNNN.")
    num_output_files: int = field_option(0, "Output files (0: the runner decides).")
    instances: InstanceOptions = InstanceOptions()
    pipeline_args: typing.Tuple[str, ...] = ()

    def _rules(self):
        return (("num_output_files", self.num_output_files >= 0, "must be 0 (the runner decides) or more"),)


def main(config):
    from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary

    if not config.corpus.input_file:
        raise config.ERROR("--input_file is required: the files to read (comma-separated globs).")
    # Checked here, where it ends in one line; on a worker it would end the pipeline with the worker's traceback.
    Vocabulary.from_file(config.vocab_file).require(SPECIAL_TOKENS, "pre-training data", pad_first=True)
    from bert_tf.instances.statistics import unknown_line

    settings = TokenizerSettings.for_vocab(config.vocab_file, config.do_lower_case, config.strip_accents)
    with others_output_hidden():
        import apache_beam as beam
        from apache_beam.metrics.metric import MetricsFilter
        from apache_beam.options.pipeline_options import PipelineOptions

        from bert_tf.instances.beam_pipeline import build_pipeline

        pipeline = beam.Pipeline(options=PipelineOptions(list(config.pipeline_args)))
        build_pipeline(pipeline, config.corpus.input_file, config.output_prefix, config.vocab_file,
                       config.instances, input_format=config.corpus.input_format,
                       settings=settings, num_output_files=config.num_output_files)
        result = pipeline.run()
        result.wait_until_finish()
        counters = {counter.key.metric.name: counter.committed for counter in
                    result.metrics().query(MetricsFilter().with_namespace("instances"))["counters"]}
    print(f"wrote {counters.get('instances', 0)} instances ({counters.get('random_next', 0)} with a random next "
          f"sentence) to {config.output_prefix}-*-of-*", flush=True)
    print(unknown_line(counters.get("unknown", 0), counters.get("tokens", 0)), flush=True)


COMMAND = Command(BeamPipelineConfig, main, required=("output_prefix", "vocab_file"))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

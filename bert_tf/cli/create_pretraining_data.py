"""bert-create-pretraining-data: text -> TFRecords of masked-LM / next-sentence instances, the original format.

The original script's flags and algorithm (google-research/bert create_pretraining_data.py, docs/original_recipe.md),
streaming in shards over worker processes. Examples:

  bert-create-pretraining-data --input_file='corpus/*.txt' --output_file=data/train.tfrecord@8 \\
      --vocab_file=vocab.txt --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5 --num_workers=8
  bert-create-pretraining-data --input_format=bible --output_file=data/bible.tfrecord --vocab_file=vocab.txt
  bert-create-pretraining-data --config=data.yaml --set=instances.max_seq_length=512

Every setting is a field of `CreatePretrainingDataConfig`: a flag, a key of a YAML file given as `--config`
(`corpus: {input_file: ...}`, `instances: {max_seq_length: 512, ...}`, `vocab_file: ...`), or `--set FIELD=VALUE`.
"""

import dataclasses
import signal
import threading
from typing import Optional

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.cli.exit_codes import EXIT_OK, EXIT_PREEMPTED
from bert_tf.config_schema import Section, field_option
from bert_tf.instances.options import HOW_GROUP, InstanceOptions
from bert_tf.text.corpus_spec import Corpus
from bert_tf.text.tokenizer_settings import DO_LOWER_CASE_HELP, STRIP_ACCENTS_HELP

TEXT_IN_RECORDS_OUT = "text in, records out"
VOCAB_FILE_HELP = "The vocabulary file that the BERT model was trained on."


@dataclasses.dataclass(frozen=True)
class CreatePretrainingDataConfig(Section):
    """What `bert-create-pretraining-data` reads, how it makes instances and where it writes them.

    Example:
    >>> config = CreatePretrainingDataConfig.from_dict({"corpus": {"input_file": "train.txt"}, "vocab_file": "v.txt",
    ...     "output_file": "train.tfrecord", "instances": {"max_seq_length": 64, "max_predictions_per_seq": 10}})
    >>> config.instances.pair_rules.max_num_tokens
    61
    """

    HELP_GROUP = TEXT_IN_RECORDS_OUT
    corpus: Corpus = Corpus()
    vocab_file: Optional[str] = field_option(None, VOCAB_FILE_HELP)
    do_lower_case: Optional[bool] = field_option(None, DO_LOWER_CASE_HELP)
    strip_accents: Optional[bool] = field_option(None, STRIP_ACCENTS_HELP)
    output_file: Optional[str] = field_option(None, "Output TF example file (or comma-separated list of files, or "
                                                    "PATH@N for N shards).")
    instances: InstanceOptions = InstanceOptions()
    num_workers: Optional[int] = field_option(None, "Processes building instances (default: the CPU count; 0: in the "
                                                    "main process). The output does not depend on it.",
                                              group=HOW_GROUP)
    progress: bool = field_option(True, "Show a progress bar (documents, instances) on stderr.", group=HOW_GROUP)

    def _rules(self):
        return (("num_workers", self.num_workers is None or self.num_workers >= 0,
                 "must be 0 (in the main process) or a number of worker processes"),)


def main(config):
    from bert_tf.atomic_output import check_output_file
    from bert_tf.instances.pipeline import create_pretraining_data
    from bert_tf.records.writer import check_outputs_spare_inputs, expand_output_files
    from bert_tf.text.corpus import CorpusCounts
    from bert_tf.text.file_patterns import expand_file_patterns
    from bert_tf.text.tokenizer import FullTokenizer

    options = config.instances
    output_files = expand_output_files(config.output_file)
    for path in output_files:  # before the worker processes start: a refused output ends the run with nothing done
        check_output_file(path)
    if config.corpus.files:
        check_outputs_spare_inputs(output_files, expand_file_patterns(config.corpus.files), "an input corpus file")
    check_outputs_spare_inputs(output_files, [config.vocab_file], "the vocab file")
    tokenizer = FullTokenizer.for_vocab(config.vocab_file, config.do_lower_case, config.strip_accents)
    counts = CorpusCounts()
    documents = config.corpus.read(counts)
    # SIGTERM (preemption): finish the shard being written, complete the files, exit 143.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    summary = create_pretraining_data(documents, tokenizer, output_files, options, num_workers=config.num_workers,
                                      counts=counts, progress=config.progress, stop=stop)
    print("\n".join(summary.summary_lines(options)), flush=True)
    return EXIT_PREEMPTED if summary.stopped else EXIT_OK


COMMAND = Command(CreatePretrainingDataConfig, main, required=("output_file", "vocab_file"))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

"""bert-inspect-data: show what pre-training records hold.

Prints the first instances as text ("[CLS] in the {[MASK]|beginning} god ... [SEP]": each predicted position as
{what the model sees|the label}), checks every record against the original instance structure, prints the statistics
(NSP ratio, mask rate, [MASK]/random/kept split, lengths) and with --plot_file writes a PNG of the length histogram
and masking split, and of the first instance's tokens coloured by what the masking did (not predicted, [MASK],
random token, kept; the original beside a replaced token).

  bert-inspect-data --input_file='data/train.tfrecord*' --vocab_file=vocab.txt --plot_file=data/train.png
"""

import dataclasses
from typing import Optional

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.cli.exit_codes import EXIT_BAD_INPUT
from bert_tf.config_schema import Section, field_option


@dataclasses.dataclass(frozen=True)
class InspectDataConfig(Section):
    """The records `bert-inspect-data` reads, their vocab, and what it shows.

    Example:
    >>> InspectDataConfig(input_file="train.tfrecord", vocab_file="vocab.txt").num_examples
    5
    """

    input_file: Optional[str] = field_option(None, "Records to inspect: comma-separated files and globs.")
    vocab_file: Optional[str] = field_option(None, "The vocab the records were made with (to show tokens).")
    num_examples: int = field_option(5, "Instances to print as text.")
    max_records: Optional[int] = field_option(None, "Read at most this many records for the statistics (default: "
                                                    "all).")
    plot_file: Optional[str] = field_option(None, "Where to write the PNG: the statistics and the first instance's "
                                                  "masking (default: no plot).")


def main(config):
    import numpy as np

    from bert_tf.instances.statistics import plot_statistics, statistics_of_records
    from bert_tf.records.inspection import describe_instance, structure_problems
    from bert_tf.records.packed_rows import split_rows
    from bert_tf.records.reader import read_records
    from bert_tf.records.schema import read_schema
    from bert_tf.text.file_patterns import expand_file_patterns
    from bert_tf.text.vocabulary import Vocabulary

    files = expand_file_patterns(config.input_file)
    vocabulary = Vocabulary.from_file(config.vocab_file).require(("[CLS]", "[SEP]", "[MASK]"), "inspecting records")
    schema = read_schema(files)
    schema.check(schema.max_seq_length, schema.max_predictions_per_seq)
    layout = schema.row_layout
    print(f"{len(files)} file(s), {schema.names} feature names, max_seq_length {schema.max_seq_length}, "
          + (f"max_predictions_per_seq {schema.max_predictions_per_seq}" if layout is None else
             f"packed rows (format {schema.names}): up to {layout.max_instances_per_row} instances and "
             f"{layout.max_predictions_per_row} predictions per row") + "\n")
    problems = {}
    printed = 0
    first = []

    def batches():
        nonlocal printed
        for batch in read_records(files, schema, max_records=config.max_records):
            # Packed rows are checked and shown as the instances they hold.
            instances, row_of = split_rows(batch) if layout else (batch, np.arange(len(batch["input_ids"])))
            if not first and len(instances["input_ids"]):
                first.append({k: v[0] for k, v in instances.items()})  # the instance the PNG draws
            for i in range(min(config.num_examples - printed, len(instances["input_ids"]))):
                record = {k: v[i] for k, v in instances.items()}
                where = f" (row {row_of[i]})" if layout else ""
                print(f"instance {printed}{where}: " + describe_instance(record, vocabulary.tokens) + "\n")
                printed += 1
            for rule, count in structure_problems(instances, vocabulary.cls_id, vocabulary.sep_id).items():
                problems[rule] = problems.get(rule, 0) + count
            yield batch

    stats = statistics_of_records(batches(), schema.max_seq_length, schema.max_predictions_per_seq, vocabulary)
    bad = {rule: count for rule, count in problems.items() if count}
    print(f"structure checks: {'all passed' if not bad else bad} ("
          + (f"{stats.instances} records)" if not layout else f"{stats.instances} instances in {stats.rows} rows)"))
    print("\n".join(stats.summary_lines()))
    if config.plot_file:
        plot_statistics(stats, config.plot_file, instance=first[0] if first else None, vocab=vocabulary.tokens,
                        mask_id=vocabulary.mask_id)
        print(f"wrote {config.plot_file}")
    if bad:
        return EXIT_BAD_INPUT  # the records break the original instance structure


COMMAND = Command(InspectDataConfig, main, required=("input_file", "vocab_file"))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

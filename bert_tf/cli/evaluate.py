"""bert-evaluate: held-out masked-LM (and next-sentence) accuracy of a model directory on any record file, beside
the unigram baseline, without training.

  bert-evaluate --model_dir=runs/small --eval_input_file=data/heldout-seq128.tfrecord \\
      --baseline_input_file='data/seq128-*.tfrecord'
      -> held-out masked-LM accuracy 0.31 ... unigram baseline 0.08: always ',' ...
         runs/small/evaluations/heldout-seq128.json

--model_dir is a directory written by bert-pretrain or bert-convert (its latest checkpoint is evaluated). The
records are read at their own length (any length up to the model's max_position_embeddings), every record once.
The unigram baseline always predicts the most frequent masked token of --baseline_input_file (the training
records, as the demo does), or of the eval records themselves when it is not given. The results go to their own
JSON file (--output_file), never over the eval_results.txt a bert-pretrain run wrote. A wrong flag or input ends it
with exit status 2 and one line naming the cause (see `bert_tf.cli.app`).
"""

import dataclasses
import os
from typing import Optional

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.config_schema import Section, field_option
from bert_tf.errors import InputError
from bert_tf.file_io import is_remote


@dataclasses.dataclass(frozen=True)
class EvaluateConfig(Section):
    """What `bert-evaluate` evaluates, on which records, and where the results go.

    Example:
    >>> EvaluateConfig(model_dir="runs/small", eval_input_file="heldout.tfrecord").eval_batch_size
    32
    """

    HELP_GROUP = "what to evaluate"
    model_dir: Optional[str] = field_option(None, "Directory from bert-pretrain or bert-convert (bert_config.json, "
                                                  "vocab.txt, ckpt-N): its latest checkpoint is evaluated.")
    eval_input_file: Optional[str] = field_option(None, "Held-out TFRecords from bert-create-pretraining-data "
                                                        "(comma-separated globs), read at their own length.")
    baseline_input_file: Optional[str] = field_option(None, "The training records the unigram baseline takes its "
                                                            "most frequent masked token from (default: the eval "
                                                            "records themselves).")
    eval_batch_size: int = field_option(32, "Records per batch (the last batch is padded with rows that count for "
                                            "nothing).", group="how")
    max_eval_steps: Optional[int] = field_option(None, "Batches to evaluate at most (default: every record).",
                                                 group="how")
    output_file: Optional[str] = field_option(None, "Where the results go as JSON (default: "
                                                    "<model_dir>/evaluations/<eval file name>.json).", group="how")


def check(config):
    """What needs no TensorFlow: the model directory, the batch, and an output that is not the training run's own."""
    if not is_remote(config.model_dir) and not os.path.isdir(config.model_dir):
        raise InputError(f"--model_dir {config.model_dir} does not exist or is not a directory: pass a directory "
                         f"written by bert-pretrain or bert-convert.")
    for name in ("eval_batch_size", "max_eval_steps"):
        value = getattr(config, name)
        if value is not None and value < 1:
            raise InputError(f"--{name}={value} must be a positive integer.")
    output = config.output_file
    if output and os.path.basename(output) == "eval_results.txt" and os.path.samefile(
            os.path.dirname(os.path.abspath(output)), config.model_dir):
        raise InputError(f"--output_file {output} is the training run's own results: choose another path (the "
                         f"default is <model_dir>/evaluations/<eval file name>.json).")


def main(config):
    from bert_tf.training.held_out_evaluation import (
        default_output_file,
        evaluate_model_dir,
        results_lines,
        write_results,
    )

    results = evaluate_model_dir(config.model_dir, config.eval_input_file, config.baseline_input_file,
                                 config.eval_batch_size, config.max_eval_steps)
    path = write_results(results, config.output_file or default_output_file(config.model_dir, config.eval_input_file))
    for line in results_lines(results):
        print(line)
    print(f"results: {path}", flush=True)


COMMAND = Command(EvaluateConfig, main, check=check, required=("model_dir", "eval_input_file"))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

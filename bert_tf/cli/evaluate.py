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

from absl import flags

from bert_tf.cli import app
from bert_tf.errors import InputError
from bert_tf.file_io import is_remote

FLAGS = flags.FLAGS

flags.DEFINE_string("model_dir", None, "Directory from bert-pretrain or bert-convert (bert_config.json, vocab.txt, "
                    "ckpt-N): its latest checkpoint is evaluated.")
flags.DEFINE_string("eval_input_file", None, "Held-out TFRecords from bert-create-pretraining-data (comma-separated "
                    "globs), read at their own length.")
flags.DEFINE_string("baseline_input_file", None, "The training records the unigram baseline takes its most "
                    "frequent masked token from (default: the eval records themselves).")
flags.DEFINE_string("output_file", None, "Where the results go as JSON (default: "
                    "<model_dir>/evaluations/<eval file name>.json).")
flags.DEFINE_integer("eval_batch_size", 32, "Records per batch (the last batch is padded with rows that count for "
                     "nothing).")
flags.DEFINE_integer("max_eval_steps", None, "Batches to evaluate at most (default: every record).")

HELP_GROUPS = {
    "what to evaluate": ["model_dir", "eval_input_file", "baseline_input_file"],
    "how": ["eval_batch_size", "max_eval_steps", "output_file"],
}


def check_inputs():
    """What needs no TensorFlow: the model directory and the batch."""
    import os

    if not is_remote(FLAGS.model_dir) and not os.path.isdir(FLAGS.model_dir):
        raise InputError(f"--model_dir {FLAGS.model_dir} does not exist or is not a directory: pass a directory "
                         f"written by bert-pretrain or bert-convert.")
    for name in ("eval_batch_size", "max_eval_steps"):
        if FLAGS[name].value is not None and FLAGS[name].value < 1:
            raise InputError(f"--{name}={FLAGS[name].value} must be a positive integer.")
    output = FLAGS.output_file
    if output and os.path.basename(output) == "eval_results.txt" and os.path.samefile(
            os.path.dirname(os.path.abspath(output)), FLAGS.model_dir):
        raise InputError(f"--output_file {output} is the training run's own results: choose another path (the "
                         f"default is <model_dir>/evaluations/<eval file name>.json).")


def main(argv):
    del argv
    from bert_tf.training.held_out_evaluation import (
        default_output_file,
        evaluate_model_dir,
        results_lines,
        write_results,
    )

    results = evaluate_model_dir(FLAGS.model_dir, FLAGS.eval_input_file, FLAGS.baseline_input_file,
                                 FLAGS.eval_batch_size, FLAGS.max_eval_steps)
    path = write_results(results, FLAGS.output_file or default_output_file(FLAGS.model_dir, FLAGS.eval_input_file))
    for line in results_lines(results):
        print(line)
    print(f"results: {path}", flush=True)


def run():
    app.run(main, required_flags=["model_dir", "eval_input_file"], check_inputs=check_inputs)


if __name__ == "__main__":
    run()

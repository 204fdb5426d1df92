"""`bert-pretrain`: pre-train BERT from TFRecords with a recipe from configs/pretrain/ and the original flags.

    bert-pretrain --config=bert_base_paper --model_dir=gs://bucket/bert_base \\
        --input_file='seq128/*.tfrecord' --input_file='seq512/*.tfrecord' --vocab_file=vocab.txt \\
        --strategy=tpu --tpu=my-tpu

Flags left unset keep the recipe's values. `--input_file`, `--max_seq_length` and `--max_predictions_per_seq` are
given once per phase of the recipe, in order. Re-running with the same `--model_dir` resumes (a recipe
changed since needs `--accept_recipe_change`). Exit status (see `bert_tf.cli.app`): 0 done, 2 a wrong flag, recipe
value, input file or model_dir, 3 non-finite loss (the last good checkpoint stays the latest), 143 stopped by SIGTERM
and 130 by SIGINT (Ctrl-C), each after saving a checkpoint.
"""

import os
import sys

from absl import flags, logging

from bert_tf.cli import app
from bert_tf.cli.config_flags import define_config_flags, given_settings
from bert_tf.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_PREEMPTED
from bert_tf.config_schema import parse_assignments
from bert_tf.training.platforms import apply_platform
from bert_tf.training.recipe import Recipe, RecipeError, check_ready, load_recipe, recipe_names
from bert_tf.training.strategy_names import ALL_REDUCE_IMPLEMENTATIONS, STRATEGIES

FLAGS = flags.FLAGS

flags.DEFINE_string("config", None, f"Recipe: a YAML path or a shipped recipe's name ({', '.join(recipe_names())}).")
flags.DEFINE_string("model_dir", None, "Output directory: checkpoints, bert_config.json, vocab.txt, TensorBoard "
                    "logs, curves. An existing one is resumed.")
flags.DEFINE_enum("strategy", "default", STRATEGIES, "Where to run: tpu, mirrored (local GPUs), multi_worker "
                  "(TF_CONFIG), one_device, default.")
flags.DEFINE_string("tpu", None, "TPU name or address for --strategy=tpu.")
flags.DEFINE_enum("all_reduce_implementation", None, list(ALL_REDUCE_IMPLEMENTATIONS), "How "
                  "--strategy=multi_worker all-reduces: nccl, ring (gRPC) or auto; default nccl on GPU machines, "
                  "else auto.")
flags.DEFINE_string("platform", None, "Settings that fit an accelerator (configs/platforms.yaml: tpu_v4, "
                    "tpu_v5e, a100_80gb, a100_40gb, h100_80gb, cpu): mixed precision, max_micro_batch_size, the eval "
                    "batch and, on GPUs, whole-step XLA; explicit flags still win. Global batch and schedule stay "
                    "the recipe's. A machine without the platform's device exits 2.")
flags.DEFINE_float("peak_tflops", None, "Peak TFLOP/s of all devices together, for the MFU (default: the "
                   "accelerator's data-sheet peak x replicas; measured on CPUs).")
flags.DEFINE_boolean("accept_recipe_change", False, "Resume a --model_dir even though the model, optimizer, "
                     "learning rate or warmup, batch sizes or sequence lengths differ from the recipe its "
                     "checkpoints were trained with (the directory keeps every recipe: recipe.yaml, recipe-2.yaml, "
                     "...).")
flags.DEFINE_multi_string("set", None, "Any recipe field as FIELD=VALUE (VALUE read as YAML), e.g. "
                          "--set=optimizer.beta_1=0.95 --set=model.hidden_dropout_prob=0 "
                          "--set=phases.1.max_seq_length=256.")

# The flags above say where and how the run goes; these set the recipe field they are generated from (its help,
# type and flag name, the original scripts' names where they have one: `bert_tf.cli.config_flags`); a phase's field
# is given once per phase. Unset, a field keeps the recipe's value. --platform applies its settings before them, so
# explicit flags win.
RECIPE_FLAGS = define_config_flags(Recipe, __name__, with_defaults=False)
_RUN_FLAGS = ["config", "model_dir", "input_file", "eval_input_file", "vocab_file", "bert_config_file",
              "init_checkpoint", "accept_recipe_change"]

# --help's groups, by purpose (`bert_tf.cli.flag_parsing.command_help`).
HELP_GROUPS = {
    "the run": _RUN_FLAGS,
    "where it runs": ["strategy", "tpu", "all_reduce_implementation", "platform", "peak_tflops"],
    "recipe overrides (unset: the recipe's value)": [name for name in RECIPE_FLAGS if name not in _RUN_FLAGS] + ["set"],
}


def recipe_from_flags(flag_values=FLAGS):
    """The recipe `--config` names with the override flags applied (a flag left unset keeps the recipe's value),
    then `--set FIELD=VALUE` settings. Raises `RecipeError` naming the flag or field that is wrong.

    Example:
    >>> rest = FLAGS(["bert-pretrain", "--config=demo_cpu", "--model_dir=runs/x", "--optimizer=lamb"])
    >>> recipe_from_flags().optimizer.name
    'lamb'
    """
    recipe = load_recipe(flag_values.config)
    if flag_values.platform:
        recipe = apply_platform(recipe, flag_values.platform)
    settings, given_by = given_settings(Recipe, flag_values)
    if settings:
        recipe = recipe.override(settings, flags=given_by)
    settings = parse_assignments(flag_values.set, "optimizer.beta_1=0.95", RecipeError)
    return recipe.override(settings) if settings else recipe


def check_inputs():
    """What needs no TensorFlow, before it starts: the recipe and its overrides, and that every input file exists."""
    from bert_tf.training.preflight import check_run_inputs_exist

    recipe = recipe_from_flags()
    check_ready(recipe)
    check_run_inputs_exist(recipe)


def main(argv):
    del argv
    from bert_tf.training.pretraining import run_pretraining
    from bert_tf.training.strategy import create_strategy

    recipe = recipe_from_flags()
    strategy = create_strategy(FLAGS.strategy, FLAGS.tpu, FLAGS.all_reduce_implementation)
    result = run_pretraining(recipe, FLAGS.model_dir, strategy=strategy, peak_tflops=FLAGS.peak_tflops,
                             accept_recipe_change=FLAGS.accept_recipe_change)
    if result.preempted:
        # The checkpoint and logs are written. TensorFlow's teardown of its thread pools at interpreter exit took
        # ~10 s on a loaded 2-core machine, a third of a preemption notice: skip it.
        logging.flush()
        interrupted = result.stopped_by == "SIGINT"
        stopped_by = "SIGINT (Ctrl-C)" if interrupted else result.stopped_by or "SIGTERM"
        print(f"{app.program_name(main)}: stopped by {stopped_by} at step {result.step} after saving "
              f"{result.checkpoint}; run the same command again to resume.", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED if interrupted else EXIT_PREEMPTED)
    return EXIT_OK


def run():
    app.run(main, required_flags=["config", "model_dir"], check_inputs=check_inputs)


if __name__ == "__main__":
    run()

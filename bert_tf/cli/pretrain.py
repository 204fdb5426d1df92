"""`bert-pretrain`: pre-train BERT from TFRecords with a recipe from configs/pretrain/ and the original flags.

    bert-pretrain --config=bert_base_paper --model_dir=gs://bucket/bert_base \\
        --input_file='seq128/*.tfrecord' --input_file='seq512/*.tfrecord' --vocab_file=vocab.txt \\
        --strategy=tpu --tpu=my-tpu

Flags left unset keep the recipe's values. `--input_file`, `--max_seq_length` and `--max_predictions_per_seq` are
given once per phase of the recipe, in order. `--set` sets any recipe field by its path
(`--set=optimizer.beta_1=0.95`, `--set=phases.1.max_seq_length=256`) and any run option as `run.FIELD`
(`--set=run.tpu=my-tpu`); a `--config` file holds a recipe, or the whole configuration when its top level is exactly
`recipe:` and `run:`. Re-running with the same `--model_dir` resumes (a recipe changed since needs
`--accept_recipe_change`). Exit status (see `bert_tf.cli.app`): 0 done, 2 a wrong flag, recipe
value, input file or model_dir, 3 non-finite loss (the last good checkpoint stays the latest), 143 stopped by SIGTERM
and 130 by SIGINT (Ctrl-C), each after saving a checkpoint.
"""

import dataclasses
import sys

from bert_tf.cli import app
from bert_tf.cli.command import Command, CommandConfig
from bert_tf.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_PREEMPTED
from bert_tf.training.platforms import apply_platform
from bert_tf.training.recipe import Recipe, check_ready, load_recipe, recipe_names
from bert_tf.training.run_options import RunOptions


@dataclasses.dataclass(frozen=True)
class PretrainConfig(CommandConfig):
    """A `bert-pretrain` run: where it goes (`run`) and what it trains (`recipe`, the `--config` file's).

    A platform (`recipe.platform`, `--platform`) is applied before the other settings of the same override, so
    that they win over its settings.

    Example:
    >>> config = PretrainConfig(recipe=load_recipe("demo_cpu"), run=RunOptions(model_dir="runs/demo"))
    >>> config.override({"recipe.num_train_steps": 1000, "run.strategy": "one_device"}).recipe.phases[0].num_steps
    1000
    >>> config.override({"recipe.platform": "cpu", "recipe.max_micro_batch_size": 4}).recipe.max_micro_batch_size
    4
    """

    MAIN_SECTION = "recipe"
    run: RunOptions = RunOptions()
    recipe: Recipe = dataclasses.field(kw_only=True)

    def override(self, settings, where=None, flags=None):
        platform = settings.get("recipe.platform")
        if platform is None:
            return super().override(settings, where, flags)
        fitted = dataclasses.replace(self, recipe=apply_platform(self.recipe, platform))
        rest = {path: value for path, value in settings.items() if path != "recipe.platform"}
        return fitted.override(rest, where, flags) if rest else fitted


def check(config):
    """What needs no TensorFlow, before it starts: the recipe is ready to train and every input file exists."""
    from bert_tf.training.preflight import check_run_inputs_exist

    check_ready(config.recipe)
    check_run_inputs_exist(config.recipe)


def main(config):
    from bert_tf.training.pretraining import run_pretraining
    from bert_tf.training.strategy import create_strategy

    run = config.run
    strategy = create_strategy(run.strategy, run.tpu, run.all_reduce_implementation)
    result = run_pretraining(config.recipe, run.model_dir, strategy=strategy, peak_tflops=run.peak_tflops,
                             accept_recipe_change=run.accept_recipe_change)
    if not result.preempted:
        return EXIT_OK
    interrupted = result.stopped_by == "SIGINT"
    stopped_by = "SIGINT (Ctrl-C)" if interrupted else result.stopped_by or "SIGTERM"
    print(f"{COMMAND.program}: stopped by {stopped_by} at step {result.step} after saving {result.checkpoint}; run "
          f"the same command again to resume.", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED if interrupted else EXIT_PREEMPTED


COMMAND = Command(
    PretrainConfig, main, load=load_recipe,
    config_help=f"Recipe: a YAML path or a shipped recipe's name ({', '.join(recipe_names())}); a file whose top "
                f"level is exactly recipe: and run: holds the whole configuration.",
    check=check, required=("config", "model_dir"))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

"""Where and how a pre-training run goes, beside its recipe: the model directory, the distribution strategy, the
peak for the MFU and whether a changed recipe may resume. `bert-pretrain`'s flags are generated from these fields;
`run_pretraining` takes them as arguments.
"""

import dataclasses
from typing import Optional

from bert_tf.config_schema import Section, field_option
from bert_tf.training.recipe import RUN_GROUP, WHERE_GROUP, RecipeError
from bert_tf.training.strategy_names import ALL_REDUCE_IMPLEMENTATIONS, STRATEGIES


@dataclasses.dataclass(frozen=True)
class RunOptions(Section):
    """The options of one run that are not part of its recipe (a resumed run may change them freely).

    Example:
    >>> RunOptions(model_dir="runs/base", strategy="tpu", tpu="my-tpu").strategy
    'tpu'
    >>> RunOptions(strategy="gpus")
    Traceback (most recent call last):
    bert_tf.training.recipe.RecipeError: run.strategy='gpus' must be one of tpu, mirrored, multi_worker, \
one_device, default.
    """

    SECTION = "run"
    ERROR = RecipeError
    HELP_GROUP = WHERE_GROUP
    model_dir: Optional[str] = field_option(None, "Output directory: checkpoints, bert_config.json, vocab.txt, "
                                                  "TensorBoard logs, curves. An existing one is resumed.",
                                            group=RUN_GROUP)
    accept_recipe_change: bool = field_option(
        False, "Resume a --model_dir even though the model, optimizer, learning rate or warmup, batch sizes or "
               "sequence lengths differ from the recipe its checkpoints were trained with (the directory keeps every "
               "recipe: recipe.yaml, recipe-2.yaml, ...).", group=RUN_GROUP)
    strategy: str = field_option("default", "Where to run: tpu, mirrored (local GPUs), multi_worker (TF_CONFIG), "
                                            "one_device, default.", choices=STRATEGIES)
    tpu: Optional[str] = field_option(None, "TPU name or address for --strategy=tpu.")
    all_reduce_implementation: Optional[str] = field_option(
        None, "How --strategy=multi_worker all-reduces: nccl, ring (gRPC) or auto; default nccl on GPU machines, else "
              "auto.", choices=ALL_REDUCE_IMPLEMENTATIONS)
    peak_tflops: Optional[float] = field_option(None, "Peak TFLOP/s of all devices together, for the MFU (default: "
                                                      "the accelerator's data-sheet peak x replicas; measured on "
                                                      "CPUs).")

    def _rules(self):
        return (("strategy", self.strategy in STRATEGIES, f"must be one of {', '.join(STRATEGIES)}"),
                ("all_reduce_implementation",
                 self.all_reduce_implementation in (None,) + ALL_REDUCE_IMPLEMENTATIONS,
                 f"must be one of {', '.join(ALL_REDUCE_IMPLEMENTATIONS)} or null"))

"""Pre-training runs: recipes as data, the strategy, the distributed multi-step loop, checkpoints that resume exactly,
preemption, and what a user watches (TensorBoard, console, curves, eval). The optimizers live in
`bert_tf.optimizers`, the FLOP and peak arithmetic in `bert_tf.accelerators`.

The names below are imported on first use.

Example:
    recipe = load_recipe("demo_cpu").override({"phases.input_file": ["data/train.tfrecord"], "vocab_file": "vocab.txt"})
    result = run_pretraining(recipe, "runs/demo", strategy=create_strategy("default"))
"""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "evaluate": "bert_tf.training.evaluation",
    "NonFiniteLossError": "bert_tf.training.pretraining",
    "PretrainingResult": "bert_tf.training.pretraining",
    "run_pretraining": "bert_tf.training.pretraining",
    "Recipe": "bert_tf.training.recipe",
    "RecipeError": "bert_tf.training.recipe",
    "load_recipe": "bert_tf.training.recipe",
    "create_strategy": "bert_tf.training.strategy",
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

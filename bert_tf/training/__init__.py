"""Pre-training: the original optimizer and schedule, recipes as data, the distributed multi-step loop, checkpoints
that resume exactly, and what a user watches (TensorBoard, console, curves, eval).

The names below are imported on first use: the optimizers and the FLOP formula need only Keras (they also run
under the JAX backend); the loop, strategy and recipe loading bring TensorFlow.

Example:
    recipe = load_recipe("demo_cpu").with_overrides(input_file=["data/train.tfrecord"], vocab_file="vocab.txt")
    result = run_pretraining(recipe, "runs/demo", strategy=create_strategy("default"))
"""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "AdamWeightDecay": "bert_tf.training.adam_weight_decay",
    "evaluate": "bert_tf.training.evaluation",
    "Lamb": "bert_tf.training.lamb",
    "create_optimizer": "bert_tf.training.optimization",
    "NonFiniteLossError": "bert_tf.training.pretraining",
    "PretrainingResult": "bert_tf.training.pretraining",
    "run_pretraining": "bert_tf.training.pretraining",
    "Recipe": "bert_tf.training.recipe",
    "RecipeError": "bert_tf.training.recipe",
    "load_recipe": "bert_tf.training.recipe",
    "WarmupPolynomialDecay": "bert_tf.training.schedule",
    "create_strategy": "bert_tf.training.strategy",
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

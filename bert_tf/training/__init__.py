"""Pre-training: the original optimizer and schedule, recipes as data, the distributed multi-step loop, checkpoints
that resume exactly, and what a user watches (TensorBoard, console, curves, eval).

Example:
    recipe = load_recipe("demo_cpu").with_overrides(input_file=["data/train.tfrecord"], vocab_file="vocab.txt")
    result = run_pretraining(recipe, "runs/demo", strategy=create_strategy("default"))
"""

from bert_tf.training.adam_weight_decay import AdamWeightDecay
from bert_tf.training.evaluation import evaluate
from bert_tf.training.lamb import Lamb
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.pretraining import NonFiniteLossError, PretrainingResult, run_pretraining
from bert_tf.training.recipe import Recipe, RecipeError, load_recipe
from bert_tf.training.schedule import WarmupPolynomialDecay
from bert_tf.training.strategy import create_strategy

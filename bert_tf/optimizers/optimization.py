"""The original `optimization.create_optimizer` for the Keras 3 loop: schedule, optimizer, clipping, loss scaling."""

import keras

from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay
from bert_tf.optimizers.lamb import Lamb
from bert_tf.optimizers.schedule import WarmupPolynomialDecay


def create_optimizer(recipe):
    """The optimizer of a `Recipe`: `WarmupPolynomialDecay` over the whole run, AdamWeightDecay (or LAMB) with the
    recipe's parameters, global-norm clipping, and for `mixed_float16` a `LossScaleOptimizer` (dynamic scale).

    Call it under the strategy's scope. The optimizer does not sum gradients across replicas (`Trainer` averages
    them first), so use it with `Trainer`; for `model.fit`, build `AdamWeightDecay` directly.

    Example:
    >>> with strategy.scope():  # doctest: +SKIP
    ...     optimizer = create_optimizer(load_recipe("bert_base_paper"))
    >>> float(optimizer.learning_rate)  # step 0 of the warmup  # doctest: +SKIP
    0.0
    """
    spec = recipe.optimizer
    schedule = WarmupPolynomialDecay(recipe.learning_rate, recipe.num_train_steps, recipe.num_warmup_steps)
    cls = {"adamw": AdamWeightDecay, "lamb": Lamb}[spec.name]
    optimizer = cls(learning_rate=schedule, weight_decay_rate=spec.weight_decay_rate, beta_1=spec.beta_1,
                    beta_2=spec.beta_2, epsilon=spec.epsilon, exclude_from_weight_decay=spec.exclude_from_weight_decay,
                    global_clipnorm=spec.clip_norm, aggregate_gradients=False)
    if recipe.mixed_precision == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer

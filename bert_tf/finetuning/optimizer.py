"""The fine-tuning optimizer: Keras AdamW on the original schedule (linear warmup, then linear decay to 0)."""

import keras

from bert_tf.training.schedule import WarmupPolynomialDecay

# The original excludes LayerNorm parameters and biases from weight decay; Keras matches `variable.name`, the
# last part of the path (LayerNorm's are `gamma` and `beta`).
NO_DECAY = ("gamma", "beta", "bias")


def create_finetuning_optimizer(learning_rate, num_train_steps, num_warmup_steps=None, weight_decay=0.01):
    """`keras.optimizers.AdamW` with `WarmupPolynomialDecay` and the original's fine-tuning settings: beta 0.9 /
    0.999, epsilon 1e-6, weight decay 0.01 except on LayerNorm and biases, gradients clipped to global norm 1.

    Keras AdamW corrects the moments' bias and decays the weights with the learning rate (the original's
    AdamWeightDecay, in `bert_tf.training`, does neither); for fine-tuning the difference is small.

    Args:
        learning_rate: peak rate (the paper tried 5e-5, 3e-5, 2e-5).
        num_train_steps: the steps of the whole run (epochs * steps per epoch).
        num_warmup_steps: linear warmup from 0; default 10% of the run (the original's warmup_proportion).
        weight_decay: decoupled weight decay rate.

    Example:
    >>> optimizer = create_finetuning_optimizer(2e-5, num_train_steps=1000)   # 100 warmup steps
    >>> model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # doctest: +SKIP
    """
    if num_warmup_steps is None:
        num_warmup_steps = int(0.1 * num_train_steps)
    schedule = WarmupPolynomialDecay(learning_rate, num_train_steps, num_warmup_steps)
    optimizer = keras.optimizers.AdamW(learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
                                       epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer

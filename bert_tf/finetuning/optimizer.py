"""The fine-tuning optimizer: the original's, as its run_classifier.py and run_squad.py built it."""

from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay
from bert_tf.optimizers.schedule import WarmupPolynomialDecay

# The original's warmup_proportion: the first 10% of the steps warm the learning rate up from 0.
WARMUP_PROPORTION = 0.1


def create_finetuning_optimizer(learning_rate, num_train_steps, num_warmup_steps=None, weight_decay_rate=0.01):
    """The original fine-tuning optimizer: `AdamWeightDecay` (beta 0.9 / 0.999, epsilon 1e-6, no bias correction,
    decay 0.01 inside the update except on variables whose TF1 path holds "LayerNorm", "layer_norm" or "bias"),
    gradients clipped to global norm 1, on `WarmupPolynomialDecay` (linear warmup, then linear decay to 0).

    Keras' AdamW is not the same optimizer: it corrects the moments' bias and matches exclusions against the
    short variable name.

    Args:
        learning_rate: peak rate (the paper tried 5e-5, 3e-5, 2e-5).
        num_train_steps: the steps of the whole run (epochs * steps per epoch).
        num_warmup_steps: linear warmup from 0; default 10% of the run (the original's warmup_proportion).
        weight_decay_rate: the decoupled weight decay rate.

    Example:
    >>> optimizer = create_finetuning_optimizer(2e-5, num_train_steps=1000)   # 100 warmup steps
    >>> float(optimizer.learning_rate)   # step 0 of the warmup
    0.0
    """
    if num_warmup_steps is None:
        num_warmup_steps = int(WARMUP_PROPORTION * num_train_steps)
    schedule = WarmupPolynomialDecay(learning_rate, num_train_steps, num_warmup_steps)
    return AdamWeightDecay(learning_rate=schedule, weight_decay_rate=weight_decay_rate, beta_1=0.9, beta_2=0.999,
                           epsilon=1e-6, global_clipnorm=1.0)

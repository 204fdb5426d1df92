"""Optimizers and learning-rate schedules, Keras only (they also run under the JAX backend): the original
AdamWeightDecay, LAMB (an option), the warmup + polynomial-decay schedule, and `create_optimizer`, which builds the
pre-training optimizer of a recipe. Pre-training (`bert_tf.training`) and fine-tuning (`bert_tf.finetuning`) both use
them; nothing here knows about a run.

Example:
>>> from bert_tf.optimizers import AdamWeightDecay, WarmupPolynomialDecay
>>> optimizer = AdamWeightDecay(learning_rate=WarmupPolynomialDecay(1e-4, 1000, 100), weight_decay_rate=0.01)
>>> float(optimizer.learning_rate)
0.0
"""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "AdamWeightDecay": "bert_tf.optimizers.adam_weight_decay",
    "Lamb": "bert_tf.optimizers.lamb",
    "WarmupPolynomialDecay": "bert_tf.optimizers.schedule",
    "create_optimizer": "bert_tf.optimizers.optimization",
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

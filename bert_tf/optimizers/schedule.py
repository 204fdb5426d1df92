"""The original learning-rate schedule: linear warmup from 0, then linear decay to 0 counted from step 0."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The schedule of the original `optimization.create_optimizer`.

    `polynomial_decay(lr, step, num_train_steps, end_learning_rate, power)` counted from step 0, replaced during the
    first `num_warmup_steps` steps by `lr * step / num_warmup_steps`. So the rate is 0 at step 0, rises linearly,
    and at the end of warmup jumps onto the decay line at `lr * (1 - num_warmup_steps / num_train_steps)` (for
    power 1), reaching `end_learning_rate` at `num_train_steps`. Computed in float32 as the original did.

    Args:
        learning_rate: the peak rate (1e-4 in the paper's recipe).
        num_train_steps: the step at which the decay reaches `end_learning_rate` (the whole run, all phases).
        num_warmup_steps: steps of linear warmup (0 for none).
        end_learning_rate: the final rate (0.0).
        power: the decay's polynomial power (1.0, linear).

    Example:
    >>> schedule = WarmupPolynomialDecay(1e-4, num_train_steps=1_000_000, num_warmup_steps=10_000)
    >>> [round(float(schedule(s)), 9) for s in (0, 5_000, 10_000, 1_000_000)]
    [0.0, 5e-05, 9.9e-05, 0.0]
    """

    def __init__(self, learning_rate, num_train_steps, num_warmup_steps=0, end_learning_rate=0.0, power=1.0):
        if learning_rate <= 0:
            raise ValueError(f"learning_rate={learning_rate} must be positive.")
        if num_train_steps < 1:
            raise ValueError(f"num_train_steps={num_train_steps} must be at least 1.")
        if not 0 <= num_warmup_steps <= num_train_steps:
            raise ValueError(f"num_warmup_steps={num_warmup_steps} must lie in [0, num_train_steps="
                             f"{num_train_steps}].")
        self.learning_rate = float(learning_rate)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        fraction = ops.minimum(step, float(self.num_train_steps)) / float(self.num_train_steps)
        decayed = ((self.learning_rate - self.end_learning_rate) * ops.power(1.0 - fraction, self.power)
                   + self.end_learning_rate)
        if not self.num_warmup_steps:
            return decayed
        warmup = self.learning_rate * (step / float(self.num_warmup_steps))
        return ops.where(step < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self):
        return {"learning_rate": self.learning_rate, "num_train_steps": self.num_train_steps,
                "num_warmup_steps": self.num_warmup_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power}

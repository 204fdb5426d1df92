"""`MetricWindow`: the training metrics of the steps since the training log's last row.

A row of the log covers a fixed span of steps (`Controller.train_phase` ends one at the next multiple of
`iterations_per_loop`, the next checkpoint or the phase's end), which several calls of the training loop may
share: with several workers a call is cut short by time, and a run stopped by SIGTERM stops inside a span.
The window's sums live in a variable that each checkpoint saves, so a resumed run completes the span it stopped
in and logs the row an uninterrupted run logs.
"""

import tensorflow as tf

from bert_tf.training.trainer import LoopResult


class MetricWindow:
    """Sums of the metrics over the steps of the current span, and the steps and seconds this process timed in it.

    Args:
        names: the metric names of the loop's `LoopResult.means`.

    Example:
    >>> window = MetricWindow(["loss"])
    >>> window.add(LoopResult(3, {"loss": 2.0}), seconds=1.5)
    >>> window.add(LoopResult(1, {"loss": 6.0}), seconds=0.5)
    >>> result, seconds = window.close()
    >>> result.steps, result.means, seconds, window.steps
    (4, {'loss': 3.0}, 2.0, 0)
    """

    def __init__(self, names):
        self.names = tuple(names)
        # float64 on the host's CPU: the sums of a span read the same whether its steps came in one call or many,
        # and adding to them (between loop calls) never queues behind a GPU's steps, as it would on GPU:0.
        with tf.device("/device:CPU:0"):
            self.sums = tf.Variable(tf.zeros(len(self.names) + 1, tf.float64), trainable=False,
                                    name="metric_window")
        self._timed_steps, self._seconds = 0, 0.0

    @property
    def steps(self):
        """Steps in the span so far (including those of a run that stopped and was resumed)."""
        return int(self.sums[-1].numpy())

    def add(self, result, seconds):
        """Adds a loop call's `LoopResult` (no bad step) that took `seconds`."""
        self.sums.assign_add([result.means[name] * result.steps for name in self.names] + [result.steps])
        self._timed_steps += result.steps
        self._seconds += seconds

    def close(self):
        """(a `LoopResult` of the span's means over all its steps and of the steps this process ran, the seconds
        those took); the next span starts empty."""
        sums = self.sums.numpy()
        means = {name: float(sums[i] / sums[-1]) for i, name in enumerate(self.names)}
        result, seconds = LoopResult(self._timed_steps, means), self._seconds
        self.sums.assign(tf.zeros_like(self.sums))
        self._timed_steps, self._seconds = 0, 0.0
        return result, seconds

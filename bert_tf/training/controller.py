"""`Controller`: the host side of a run, with named actions around the trainer's loop function.

In the manner of Orbit's `Controller`: the trainer owns the compiled loop (`Trainer.train`), and the controller
decides how many steps each call runs and what happens between calls: `write_summaries`, `save_checkpoint`,
`preemption_requested`, `evaluate`. The global step is the optimizer's update count (`Trainer.step`), read once
per loop.
"""

import os
import time

import tensorflow as tf
from absl import logging

from bert_tf.errors import NonFiniteLossError
from bert_tf.training.strategy import any_worker


class Controller:
    """Trains one phase at a time, checkpointing every `save_checkpoints_steps`, and stops on SIGTERM.

    Args:
        trainer: the `Trainer` (loop function, model, optimizer, strategy).
        log: the run's `TrainingLog` (TensorBoard, history, console).
        preemption: a `PreemptionWatcher` whose flag is `trainer.stop_requested`.
        save_checkpoints_steps, iterations_per_loop: the recipe's.
        peak: the `peak_flops.Peak` the MFU divides by (None leaves the MFU out).
        evaluator: a callable `() -> dict` of eval metrics (see `evaluation.StrategyEvaluator`), or None.

    Example:
    >>> controller = Controller(trainer, log, preemption, save_checkpoints_steps=1000,
    ...                         iterations_per_loop=1000)  # doctest: +SKIP
    >>> controller.train_phase(phase, iterator, checkpoint, end=900_000, flops_per_step=5.7e14)  # doctest: +SKIP
    False
    """

    def __init__(self, trainer, log, preemption, save_checkpoints_steps, iterations_per_loop, peak=None,
                 evaluator=None):
        self.trainer = trainer
        self.log = log
        self.preemption = preemption
        self.save_checkpoints_steps = save_checkpoints_steps
        self.iterations_per_loop = iterations_per_loop
        self.peak = peak
        self.evaluator = evaluator
        self.last_metrics = {}

    def train_phase(self, phase, iterator, checkpoint, end, flops_per_step, global_batch):
        """Trains `phase` until the global step reaches `end`; returns True when it stopped on SIGTERM (after
        saving). Raises `NonFiniteLossError` on a non-finite step, without saving."""
        step = self.trainer.step
        while step < end:
            next_save = (step // self.save_checkpoints_steps + 1) * self.save_checkpoints_steps
            num_steps = min(self.iterations_per_loop, end - step, next_save - step)
            started = time.perf_counter()
            result = self.trainer.train(iterator, num_steps)
            seconds = time.perf_counter() - started
            if result.bad_step is not None:
                raise NonFiniteLossError(self._non_finite_message(result, phase, checkpoint.manager.directory))
            step = self.trainer.step
            if result.steps:
                self.write_summaries(step, phase, result, seconds, global_batch, flops_per_step)
            preempted = self.preemption_requested()
            if step >= next_save or step >= end or preempted:
                self.save_checkpoint(checkpoint, step)
            if preempted:
                logging.warning("Stopped on SIGTERM at step %d after saving; re-run the same command to resume.",
                                step)
                return True
        return False

    def write_summaries(self, step, phase, result, seconds, global_batch, flops_per_step):
        self.last_metrics = self.log.record(step, phase.name, result.means, result.steps, seconds,
                                            result.steps * global_batch, result.steps * flops_per_step,
                                            self.peak)

    def save_checkpoint(self, checkpoint, step):
        return checkpoint.save(step)

    def preemption_requested(self):
        """Whether SIGTERM arrived on any worker (all workers then stop at the same step)."""
        return any_worker(self.trainer.strategy, self.trainer.layout, self.preemption.requested())

    def evaluate(self):
        """Runs the evaluator and records its metrics at the current step; None without an evaluator."""
        if self.evaluator is None:
            return None
        results = self.evaluator()
        self.log.record_eval(self.trainer.step, results)
        return results

    @staticmethod
    def _non_finite_message(result, phase, ckpt_dir):
        latest = tf.train.latest_checkpoint(ckpt_dir)
        kept = (f"the latest checkpoint is still {os.path.basename(latest)}, the last good state, and re-running "
                f"resumes from it" if latest else "no checkpoint was written yet")
        return (f"The training loss became {result.bad_loss} at step {result.bad_step} (phase {phase.name}); "
                f"stopped without saving: {kept} ({ckpt_dir}). Lower --learning_rate or raise --num_warmup_steps, "
                f"check the input records, or leave out --mixed_precision=mixed_float16.")

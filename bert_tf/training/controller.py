"""`Controller`: the host side of a run, with named actions around the trainer's loop function.

In the manner of Orbit's `Controller`: the trainer owns the compiled loop (`Trainer.train`), and the controller
decides how many steps each call runs and what happens between calls: `write_summaries`, `save_checkpoint`,
`preemption_requested`, `checkpoint_requested`, `evaluate`, and the caller's own train and eval actions (as Orbit's
`Controller(train_actions=..., eval_actions=...)`), any of which may ask the run to stop. The global step is the
optimizer's update count (`Trainer.step`), read once per loop.

A row of the training log covers a fixed span of steps: up to the next multiple of `iterations_per_loop`, the
next checkpoint or the phase's end. With one worker process a span is one loop call, which stops within a step
on SIGTERM (the trainer reads its stop flag each step). With several workers every worker must run the same steps
(each step is a collective), so a worker's flag cannot end its loop on its own: calls are then cut to about
`max_seconds_per_loop` at the measured pace, and between calls one small all-reduce tells every worker whether
SIGTERM reached any of them and how many steps the next call runs. A maintenance notice (Google Cloud GPU VMs)
asks for a checkpoint at the next call's end instead, and an action's request to stop ends the run after a
checkpoint, both agreed the same way. See docs/accelerators.md,
"Preemption".
"""

import dataclasses
import os
import time

import tensorflow as tf
from absl import logging

from bert_tf.errors import NonFiniteLossError
from bert_tf.training.metric_window import MetricWindow
from bert_tf.training.strategy import sum_over_workers


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class Controller:
    """Trains one phase at a time, checkpointing every `save_checkpoints_steps`; stops on SIGTERM or when one of the
    caller's actions asks.

    Every argument is keyword-only, as in Orbit's `Controller`.

    Args:
        trainer: the `Trainer` (loop function, model, optimizer, strategy).
        log: the run's `TrainingLog` (TensorBoard, history, console).
        save_checkpoints_steps, iterations_per_loop: the recipe's.
        preemption: a `PreemptionWatcher` whose flag is `trainer.stop_requested`, or None (never preempted).
        peak: the `peak_flops.Peak` the MFU divides by (None leaves the MFU out).
        evaluator: a callable `() -> dict` of eval metrics (`PretrainingRun` passes one that runs
            `evaluation.evaluate` on the recipe's eval records), or None.
        max_seconds_per_loop: with several workers, the time a loop call is sized to (None: no bound).
        maintenance: a `MaintenanceWatcher` whose notices ask for a checkpoint, or None.
        eval_every_steps: `train_phase` evaluates after each log row that passes a multiple of it (None: only
            when `evaluate` is called, as `PretrainingRun.finish` does at the end).
        train_actions: callables called with each log row's metrics (the span's means, speeds and `step`).
        eval_actions: callables called with each evaluation's metrics and `step`.
            An action that returns a true value asks the run to stop: `train_phase` saves a checkpoint at that step and
            returns True, as on SIGTERM (every worker stops at the same step).

    Attributes:
        window: the `MetricWindow` of the current log row's span (the checkpoint saves it).
        stop_asked_by: the action that asked the run to stop, or None.

    Example:
    >>> controller = Controller(trainer=trainer, log=log, save_checkpoints_steps=1000, iterations_per_loop=1000,
    ...                         preemption=preemption, max_seconds_per_loop=5.0)  # doctest: +SKIP
    >>> controller.train_phase(phase, iterators, checkpoint, end=900_000, flops_per_step=5.7e14)  # doctest: +SKIP
    False
    >>> # Stop once held-out masked-LM accuracy reaches 0.3, scored every 100 steps:
    >>> controller = Controller(trainer=trainer, log=log, save_checkpoints_steps=1000, iterations_per_loop=100,
    ...                         evaluator=evaluator, eval_every_steps=100,
    ...                         eval_actions=[lambda results: results["masked_lm_accuracy"] >= 0.3])  # doctest: +SKIP
    """

    trainer: object
    log: object
    save_checkpoints_steps: int
    iterations_per_loop: int
    preemption: object = None
    peak: object = None
    evaluator: object = None
    max_seconds_per_loop: float = None
    maintenance: object = None
    eval_every_steps: int = None
    train_actions: tuple = ()
    eval_actions: tuple = ()
    window: MetricWindow = dataclasses.field(init=False)
    last_metrics: dict = dataclasses.field(init=False, default_factory=dict)
    stop_asked_by: object = dataclasses.field(init=False, default=None)

    def __post_init__(self):
        self.window = MetricWindow(self.trainer.metric_names)

    def train_phase(self, phase, iterators, checkpoint, end, flops_per_step, global_batch):
        """Trains `phase` from `iterators` (one per input host of the trainer's layout) until the global step reaches
        `end`; returns True when it stopped early, on SIGTERM or SIGINT or at an action's request (after saving).
        Raises `NonFiniteLossError` on a non-finite step, without saving."""
        step = self.trainer.step
        seconds_per_step = None  # a phase's first call traces the loop for its shapes: it runs one step
        while step < end:
            next_save = (step // self.save_checkpoints_steps + 1) * self.save_checkpoints_steps
            span_end = min((step // self.iterations_per_loop + 1) * self.iterations_per_loop, next_save, end)
            started = time.perf_counter()
            result = self.trainer.train(iterators, self.loop_steps(span_end - step, seconds_per_step))
            seconds = time.perf_counter() - started
            if result.bad_step is not None:
                raise NonFiniteLossError(self._non_finite_message(result, phase, checkpoint.manager.directory))
            if seconds_per_step is None:
                logging.info("Phase %s: the loop was traced and ran its first %d step(s) in %.1f s.", phase.name,
                             result.steps, seconds)
            last_row_step, step = step, self.trainer.step
            self.window.add(result, seconds)
            if step >= span_end:
                self.write_summaries(step, phase, *self.window.close(), global_batch, flops_per_step)
                self.run_actions(self.train_actions, self.last_metrics)
                if self.eval_every_steps and step // self.eval_every_steps > last_row_step // self.eval_every_steps:
                    self.evaluate()
            preempted, save_now, asked, seconds_per_step = self.agree(seconds / max(result.steps, 1))
            if step >= next_save or step >= end or preempted or save_now or asked:
                self.save_checkpoint(checkpoint, step)
            if preempted:
                logging.warning("Stopped on %s at step %d after saving its checkpoint; re-run the same command to "
                                "resume from step %d.", self.stop_signal_name(), step, step)
                return True
            if asked:
                logging.info("Stopped at step %d after saving its checkpoint: %s asked to.", step,
                             self.stop_asked_by or "an action of another worker")
                return True
        return False

    def loop_steps(self, remaining, seconds_per_step):
        """Steps for the next loop call: the `remaining` steps of the span, or, when the loop cannot stop on its
        own (several workers), as many as fit in `max_seconds_per_loop` at `seconds_per_step` (at least one)."""
        if self.trainer.reads_stop_flag or not self.max_seconds_per_loop:
            return remaining
        if seconds_per_step is None:
            return 1
        return max(1, min(remaining, int(self.max_seconds_per_loop / seconds_per_step)))

    def agree(self, seconds_per_step):
        """(whether SIGTERM reached any worker, whether any asks for a checkpoint, whether an action of any asked
        to stop, the chief's `seconds_per_step`): one all-reduce between loop calls, so that all workers stop or save
        at the same step and size their next call alike."""
        layout = self.trainer.layout
        stop, save, asked, chief_pace = sum_over_workers(
            self.trainer.strategy, layout, [float(self.preemption_requested()), float(self.checkpoint_requested()),
                                            float(self.stop_asked_by is not None),
                                            seconds_per_step if layout.is_chief else 0.0])
        return bool(stop), bool(save), bool(asked), float(chief_pace)

    def run_actions(self, actions, outputs):
        """Calls each action with `outputs`; the first that returns a true value is named in `stop_asked_by`."""
        for action in actions:
            if action(outputs) and self.stop_asked_by is None:
                self.stop_asked_by = getattr(action, "__qualname__", repr(action))

    def write_summaries(self, step, phase, result, seconds, global_batch, flops_per_step):
        self.last_metrics = self.log.record(step, phase.name, result.means, result.steps, seconds,
                                            result.steps * global_batch, result.steps * flops_per_step,
                                            self.peak)

    def save_checkpoint(self, checkpoint, step):
        return checkpoint.save(step)

    def preemption_requested(self):
        """Whether SIGTERM or SIGINT reached this worker (`agree` tells every worker whether it reached any)."""
        return self.preemption is not None and self.preemption.requested()

    def stop_signal_name(self):
        """The signal that stopped the run on this worker, or what reached another worker."""
        name = getattr(self.preemption, "signal_name", None)
        return name or "a stop signal (SIGTERM or SIGINT) of another worker"

    def checkpoint_requested(self):
        """Whether a maintenance notice reached this worker since the last call."""
        return self.maintenance is not None and self.maintenance.take()

    def evaluate(self):
        """Runs the evaluator, records its metrics at the current step and hands them to the eval actions; None
        without an evaluator."""
        if self.evaluator is None:
            return None
        results = self.evaluator()
        self.log.record_eval(self.trainer.step, results)
        self.run_actions(self.eval_actions, {**results, "step": self.trainer.step})
        return results

    @staticmethod
    def _non_finite_message(result, phase, ckpt_dir):
        latest = tf.train.latest_checkpoint(ckpt_dir)
        kept = (f"the latest checkpoint is still {os.path.basename(latest)}, the last good state, and re-running "
                f"resumes from it" if latest else "no checkpoint was written yet")
        return (f"The training loss became {result.bad_loss} at step {result.bad_step} (phase {phase.name}); "
                f"stopped without saving: {kept} ({ckpt_dir}). Lower --learning_rate or raise --num_warmup_steps, "
                f"check the input records, or leave out --mixed_precision=mixed_float16.")

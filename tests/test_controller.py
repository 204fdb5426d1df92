"""The controller's host loop and the metric window, driven by a plain Python trainer: which steps each loop call
runs, where the log's rows and the checkpoints fall, what SIGTERM, a maintenance notice, a non-finite loss and the
train and eval actions do. The fake trainer's step k has loss k, so every row's mean says which steps it covered.
One real tiny run checks that an action's stop leaves a run that resumes."""

import dataclasses
import os
import types

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import NonFiniteLossError
from bert_tf.training.controller import Controller
from bert_tf.training.metric_window import MetricWindow
from bert_tf.training.pretraining import PretrainingRun, run_pretraining
from bert_tf.training.recipe import Recipe
from bert_tf.training.trainer import LoopResult
from bert_tf.training.training_log import HISTORY_FILE, read_eval_results, read_history
from pretraining_records import one_phase_tiny_recipe

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

PHASE = types.SimpleNamespace(name="seq128")


class FakeTrainer:
    """What the controller uses of a `Trainer`: `train`, `step`, `layout`, `strategy`, `reads_stop_flag`,
    `metric_names`. Step k has loss k; `bad_step` makes that step non-finite."""

    metric_names = ("loss",)
    strategy = None

    def __init__(self, step=0, reads_stop_flag=True, bad_step=None):
        self.step, self.reads_stop_flag, self.bad_step = step, reads_stop_flag, bad_step
        self.layout = types.SimpleNamespace(num_workers=1, is_chief=True)
        self.calls = []

    def train(self, iterators, num_steps):
        self.calls.append(num_steps)
        steps = range(self.step + 1, self.step + num_steps + 1)
        if self.bad_step in steps:
            good = self.bad_step - self.step - 1
            self.step += good
            return LoopResult(num_steps, {"loss": 0.0}, bad_step=self.bad_step, bad_loss=float("nan"))
        self.step += num_steps
        return LoopResult(num_steps, {"loss": float(np.mean(steps))})


class FakeLog:
    def __init__(self):
        self.rows, self.evals = [], []

    def record(self, step, phase, means, steps, seconds, sequences, model_flops, peak):
        self.rows.append((step, means["loss"], steps, sequences))
        return dict(means, step=step)

    def record_eval(self, step, results):
        self.evals.append((step, results))


class FakeCheckpoint:
    def __init__(self, directory):
        self.saved = []
        self.manager = types.SimpleNamespace(directory=directory)

    def save(self, step):
        self.saved.append(step)


class Flag:
    """A preemption watcher (`requested`) or maintenance watcher (`take`) that fires at given trainer steps."""

    def __init__(self, trainer, at_steps):
        self.trainer, self.at_steps = trainer, set(at_steps)

    def requested(self):
        return self.trainer.step in self.at_steps

    def take(self):
        return self.trainer.step in self.at_steps


def controller(trainer, **kwargs):
    log = FakeLog()
    kwargs = {"save_checkpoints_steps": 10, "iterations_per_loop": 5, **kwargs}
    return Controller(trainer=trainer, log=log, **kwargs), log


def test_constructor_is_keyword_only():
    with pytest.raises(TypeError):
        Controller(FakeTrainer(), FakeLog(), 10, 5)


def test_rows_and_checkpoints_fall_on_span_boundaries(tmp_path):
    trainer = FakeTrainer()
    ctrl, log = controller(trainer)
    checkpoint = FakeCheckpoint(str(tmp_path))
    assert ctrl.train_phase(PHASE, None, checkpoint, end=23, flops_per_step=1.0, global_batch=8) is False
    assert trainer.calls == [5, 5, 5, 5, 3]
    assert log.rows == [(5, 3.0, 5, 40), (10, 8.0, 5, 40), (15, 13.0, 5, 40), (20, 18.0, 5, 40), (23, 22.0, 3, 24)]
    assert checkpoint.saved == [10, 20, 23]
    assert ctrl.last_metrics == {"loss": 22.0, "step": 23}


def test_a_resumed_run_finishes_the_span_it_stopped_in(tmp_path):
    trainer = FakeTrainer(step=12)
    ctrl, log = controller(trainer)
    checkpoint = FakeCheckpoint(str(tmp_path))
    ctrl.train_phase(PHASE, None, checkpoint, end=20, flops_per_step=1.0, global_batch=8)
    assert trainer.calls == [3, 5]
    assert [row[0] for row in log.rows] == [15, 20] and checkpoint.saved == [20]


def test_calls_cut_by_time_log_the_rows_of_uncut_calls(tmp_path):
    # Several workers: the loop cannot stop on SIGTERM by itself, so calls are sized to max_seconds_per_loop
    # (here every call is one step); the rows still cover whole spans, summed over the calls.
    trainer = FakeTrainer(reads_stop_flag=False)
    ctrl, log = controller(trainer, max_seconds_per_loop=1e-12)
    checkpoint = FakeCheckpoint(str(tmp_path))
    ctrl.train_phase(PHASE, None, checkpoint, end=12, flops_per_step=1.0, global_batch=8)
    assert trainer.calls == [1] * 12
    assert [(step, loss) for step, loss, _, _ in log.rows] == [(5, 3.0), (10, 8.0), (12, 11.5)]
    assert checkpoint.saved == [10, 12]


def test_loop_steps():
    ctrl_one, _ = controller(FakeTrainer(), max_seconds_per_loop=5.0)
    assert ctrl_one.loop_steps(7, None) == 7  # the loop reads the stop flag itself: the whole span
    ctrl, _ = controller(FakeTrainer(reads_stop_flag=False), max_seconds_per_loop=5.0)
    assert ctrl.loop_steps(1000, None) == 1  # the first call of a phase traces: one step, timed
    assert ctrl.loop_steps(1000, 0.5) == 10
    assert ctrl.loop_steps(4, 0.5) == 4
    assert ctrl.loop_steps(1000, 60.0) == 1
    unbounded, _ = controller(FakeTrainer(reads_stop_flag=False))
    assert unbounded.loop_steps(1000, 0.5) == 1000


def test_sigterm_saves_inside_a_span_and_the_resumed_window_completes_it(tmp_path):
    trainer = FakeTrainer(reads_stop_flag=False)
    ctrl, log = controller(trainer, max_seconds_per_loop=1e-12)
    ctrl.preemption = Flag(trainer, at_steps=[7])
    checkpoint = FakeCheckpoint(str(tmp_path))
    assert ctrl.train_phase(PHASE, None, checkpoint, end=20, flops_per_step=1.0, global_batch=8) is True
    assert checkpoint.saved == [7] and [row[0] for row in log.rows] == [5]
    assert ctrl.window.steps == 2

    # A new process: a new controller whose window's sums come back from the checkpoint, as TrainingCheckpoint does.
    resumed = FakeTrainer(step=7)
    ctrl2, log2 = controller(resumed)
    ctrl2.window.sums.assign(ctrl.window.sums)
    ctrl2.train_phase(PHASE, None, FakeCheckpoint(str(tmp_path)), end=20, flops_per_step=1.0, global_batch=8)
    assert resumed.calls == [3, 5, 5]
    # The row at step 10 is the uninterrupted run's: the mean over steps 6-10, though this process ran 3 of them.
    assert log2.rows[0] == (10, 8.0, 3, 24)


def test_maintenance_notice_saves_at_the_call_end_and_training_goes_on(tmp_path):
    trainer = FakeTrainer()
    ctrl, log = controller(trainer, maintenance=Flag(trainer, at_steps=[5]))
    checkpoint = FakeCheckpoint(str(tmp_path))
    assert ctrl.train_phase(PHASE, None, checkpoint, end=20, flops_per_step=1.0, global_batch=8) is False
    assert checkpoint.saved == [5, 10, 20] and trainer.step == 20


def test_non_finite_loss_raises_without_saving(tmp_path):
    trainer = FakeTrainer(bad_step=8)
    ctrl, log = controller(trainer)
    checkpoint = FakeCheckpoint(str(tmp_path))
    with pytest.raises(NonFiniteLossError, match=r"became nan at step 8 \(phase seq128\); stopped without saving: "
                                                 r"no checkpoint was written yet"):
        ctrl.train_phase(PHASE, None, checkpoint, end=20, flops_per_step=1.0, global_batch=8)
    assert checkpoint.saved == [] and [row[0] for row in log.rows] == [5]


def test_evaluate_records_at_the_current_step():
    trainer = FakeTrainer(step=40)
    ctrl, log = controller(trainer, evaluator=lambda: {"masked_lm_accuracy": 0.5})
    assert ctrl.evaluate() == {"masked_lm_accuracy": 0.5}
    assert log.evals == [(40, {"masked_lm_accuracy": 0.5})]
    assert controller(trainer)[0].evaluate() is None


def test_metric_window_means_do_not_depend_on_how_the_span_was_cut():
    one, many = MetricWindow(["loss", "grad_norm"]), MetricWindow(["loss", "grad_norm"])
    one.add(LoopResult(6, {"loss": 3.5, "grad_norm": 0.5}), seconds=3.0)
    for step in range(1, 7):
        many.add(LoopResult(1, {"loss": float(step), "grad_norm": 0.5}), seconds=0.5)
    assert many.steps == 6
    (result_one, seconds_one), (result_many, seconds_many) = one.close(), many.close()
    assert result_one.means == result_many.means == {"loss": 3.5, "grad_norm": 0.5}
    assert result_one.steps == result_many.steps == 6 and seconds_one == seconds_many == 3.0
    assert many.steps == 0  # the next span starts empty


def test_metric_window_survives_a_checkpoint_and_times_only_this_process(tmp_path):
    window = MetricWindow(["loss"])
    window.add(LoopResult(2, {"loss": 4.0}), seconds=1.0)
    path = tf.train.Checkpoint(metric_window=window.sums).save(str(tmp_path / "ckpt"))
    restored = MetricWindow(["loss"])
    tf.train.Checkpoint(metric_window=restored.sums).restore(path).assert_existing_objects_matched()
    assert restored.steps == 2
    restored.add(LoopResult(3, {"loss": 9.0}), seconds=6.0)
    result, seconds = restored.close()
    # The mean over all five steps; the speed from the three steps (and six seconds) this window timed.
    assert result.means == {"loss": 7.0} and result.steps == 3 and seconds == 6.0


def test_train_actions_see_every_row_and_one_can_stop_the_run(tmp_path):
    trainer = FakeTrainer()
    rows = []

    def stop_after_step_10(metrics):
        return metrics["step"] >= 10

    ctrl, log = controller(trainer, save_checkpoints_steps=100, train_actions=[rows.append, stop_after_step_10])
    checkpoint = FakeCheckpoint(str(tmp_path))
    assert ctrl.train_phase(PHASE, None, checkpoint, end=30, flops_per_step=1.0, global_batch=8) is True
    assert [(row["step"], row["loss"]) for row in rows] == [(5, 3.0), (10, 8.0)]
    assert trainer.step == 10 and trainer.calls == [5, 5]
    assert checkpoint.saved == [10]  # saved at the stop, though the recipe saves every 100 steps
    assert ctrl.stop_asked_by.endswith("stop_after_step_10")


def test_evaluations_every_n_steps_feed_the_eval_actions(tmp_path):
    # Rows every 4 steps, an evaluation each time a row passes a multiple of 10: at steps 12, 20 and 32.
    trainer = FakeTrainer()
    evals = []
    ctrl, log = controller(trainer, iterations_per_loop=4, save_checkpoints_steps=100, eval_every_steps=10,
                           evaluator=lambda: {"accuracy": trainer.step / 100}, eval_actions=[evals.append])
    assert ctrl.train_phase(PHASE, None, FakeCheckpoint(str(tmp_path)), end=34, flops_per_step=1.0,
                            global_batch=8) is False
    assert [(e["step"], e["accuracy"]) for e in evals] == [(12, 0.12), (20, 0.2), (32, 0.32)]
    assert [step for step, _ in log.evals] == [12, 20, 32] and ctrl.stop_asked_by is None


def test_an_action_stops_a_real_run_cleanly_and_the_run_resumes(tmp_path):
    """A tiny real run whose eval action asks to stop at step 10 of 20: the run saves there and returns; the same
    command later resumes from step 10 and finishes."""
    recipe = Recipe.from_dict(one_phase_tiny_recipe(tmp_path, "actions_test", with_eval=True))
    model_dir = str(tmp_path / "run")
    run = PretrainingRun(recipe, model_dir, peak_tflops=1.0)
    run.prepare()
    rows, evals = [], []
    run.parts = dataclasses.replace(
        run.parts, controller=dataclasses.replace(
            run.parts.controller, eval_every_steps=10, train_actions=[rows.append],
            eval_actions=[evals.append, lambda results: results["step"] >= 10]))
    assert run.train() is True
    assert run.step == 10 and [row["step"] for row in rows] == [5, 10]
    assert [e["step"] for e in evals] == [10] and 0.0 <= evals[0]["masked_lm_accuracy"] <= 1.0
    assert read_eval_results(model_dir)["global_step"] == 10
    assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-10")

    result = run_pretraining(recipe, model_dir, peak_tflops=1.0)
    assert result.completed and result.step == 20 and result.checkpoint.endswith("ckpt-20")
    assert [row["step"] for row in read_history(os.path.join(model_dir, HISTORY_FILE))] == [5, 10, 15, 20]

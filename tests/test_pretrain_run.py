"""One `bert-pretrain` run of two phases on tiny records (trained once, in this process, by the module's fixture),
and one question per test about what it left: its log, its files, its TensorBoard curves, its schedule, its
history, its evaluation, its model directory, and what running it again does."""

import glob
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
import yaml

from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import pretraining_dataset
from bert_tf.model_dir import load_pretrainer
from bert_tf.training.evaluation import evaluate
from bert_tf.training.training_log import read_eval_results, read_history
from helpers import run_cli
from pretraining_records import pretrain_flags, write_records, write_two_phase_recipe, write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

PEAK_LR, WARMUP, STEPS = 5e-3, 10, 60
CURVES = {"loss", "masked_lm_loss", "next_sentence_loss", "masked_lm_accuracy", "next_sentence_accuracy",
          "learning_rate", "grad_norm", "sequences_per_second", "steps_per_second", "model_tflops_per_second", "mfu"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run: 40 steps at 16 tokens, 20 at 32, a held-out evaluation at the end, `--learning_rate` over the
    recipe's. Returns its data, flags, model directory and `run_cli`'s result."""
    root = tmp_path_factory.mktemp("run")
    data = {"root": root, "vocab": write_vocab(root / "vocab.txt"),
            "seq16": write_records(root / "seq16.tfrecord", 256, 16, 4, seed=0),
            "seq32": write_records(root / "seq32.tfrecord", 256, 32, 6, seed=1),
            "eval": write_records(root / "eval.tfrecord", 64, 32, 6, seed=2)}
    recipe = write_two_phase_recipe(data, "cli_e2e", (40, 20), save_every=20, dropout=0.1)
    model_dir = str(root / "run")
    flags = pretrain_flags(data, recipe, model_dir, f"--eval_input_file={data['eval']}", f"--learning_rate={PEAK_LR}")
    done = run_cli("pretrain", *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"data": data, "flags": flags, "model_dir": model_dir, "done": done}


def tensorboard_scalars(log_dir):
    """{tag: {step: value}} of the TensorBoard scalars in a log directory, and the plugin names they declare."""
    scalars, plugins = {}, set()
    for path in glob.glob(os.path.join(log_dir, "*tfevents*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
                if value.metadata.plugin_data.plugin_name:
                    plugins.add(value.metadata.plugin_data.plugin_name)
    return scalars, plugins


def recipe_lr(step, peak, warmup, total):
    """The original schedule: lr * step / warmup during warmup, then linear decay to 0 counted from step 0."""
    return peak * step / warmup if step < warmup else peak * (1 - min(step, total) / total)


def test_the_log_names_each_phase_the_speed_and_the_evaluation(run):
    log = run["done"].stderr
    assert "Phase seq16: steps 0-40, seq 16, 4 predictions" in log and "Phase seq32: steps 40-60" in log
    assert "step 60/60 [seq32] loss " in log and "seq/s" in log and "MFU" in log
    assert "***** Eval results (step 60) *****" in log


def test_the_model_dir_holds_the_config_vocab_recipe_checkpoints_logs_and_curves(run):
    files = set(os.listdir(run["model_dir"]))
    assert {"bert_config.json", "vocab.txt", "recipe.yaml", "checkpoint", "ckpt-60.index", "train_metrics.jsonl",
            "eval_results.txt", "training_curves.png", "training_summary.txt", "train", "eval"} <= files
    assert [f for f in os.listdir(os.path.join(run["model_dir"], "train")) if "tfevents" in f]
    with open(os.path.join(run["model_dir"], "training_curves.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_tensorboard_has_every_curve_as_scalars_once_per_loop(run):
    train, plugins = tensorboard_scalars(os.path.join(run["model_dir"], "train"))
    assert set(train) == CURVES
    assert plugins == {"scalars"}  # so TensorBoard draws them as scalar curves
    for tag, points in train.items():
        assert sorted(points) == list(range(10, STEPS + 1, 10)), tag


def test_a_loops_learning_rate_is_the_mean_of_the_original_schedule_over_its_steps(run):
    # Step s updates with lr(s): the warmup from 0 to 5e-3 over 10 steps, then the decay to 0 at step 60, counted
    # from step 0.
    train, _ = tensorboard_scalars(os.path.join(run["model_dir"], "train"))
    for end, value in train["learning_rate"].items():
        expected = np.mean([recipe_lr(s, PEAK_LR, WARMUP, STEPS) for s in range(end - 10, end)])
        np.testing.assert_allclose(value, expected, rtol=1e-5, err_msg=f"learning_rate at step {end}")
    np.testing.assert_allclose(train["learning_rate"][10], 2.25e-3, rtol=1e-5)  # mean of 0, 0.5e-3, ..., 4.5e-3


def test_the_curves_agree_with_each_other(run):
    # The total loss is the sum of its two terms; with --peak_tflops=1 the MFU is the TFLOP/s; 8 sequences a step.
    train, _ = tensorboard_scalars(os.path.join(run["model_dir"], "train"))
    for end in train["loss"]:
        np.testing.assert_allclose(train["loss"][end], train["masked_lm_loss"][end]
                                   + train["next_sentence_loss"][end], rtol=1e-5)
        np.testing.assert_allclose(train["mfu"][end], train["model_tflops_per_second"][end], rtol=1e-6)
        np.testing.assert_allclose(train["sequences_per_second"][end], 8 * train["steps_per_second"][end],
                                   rtol=1e-6)
        assert 0 <= train["masked_lm_accuracy"][end] <= 1 and 0 <= train["next_sentence_accuracy"][end] <= 1
        assert train["grad_norm"][end] > 0


def test_the_recorded_recipe_holds_the_flags_value(run):
    with open(os.path.join(run["model_dir"], "recipe.yaml")) as f:
        assert yaml.safe_load(f)["learning_rate"] == PEAK_LR  # the flag overrode the recipe's 3e-3


def test_the_history_holds_tensorboards_numbers_by_phase_and_the_model_learns(run):
    train, _ = tensorboard_scalars(os.path.join(run["model_dir"], "train"))
    history = read_history(os.path.join(run["model_dir"], "train_metrics.jsonl"))
    assert [r["step"] for r in history] == list(range(10, STEPS + 1, 10))
    for row in history:  # the curves in TensorBoard are the history's numbers (stored as float32)
        for tag in train:
            np.testing.assert_allclose(train[tag][row["step"]], row[tag], rtol=1e-6, err_msg=tag)
    assert [r["phase"] for r in history] == ["seq16"] * 4 + ["seq32"] * 2
    assert history[-1]["masked_lm_loss"] < history[0]["masked_lm_loss"] - 0.3  # it learns


def test_the_evaluation_is_written_once_to_its_file_and_to_tensorboard(run):
    results = read_eval_results(run["model_dir"])
    assert set(results) == {"masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss",
                            "loss", "eval_batches", "global_step"} and results["global_step"] == STEPS
    evals, _ = tensorboard_scalars(os.path.join(run["model_dir"], "eval"))
    assert set(evals) == set(results) - {"global_step"}
    for tag, points in evals.items():  # one eval point at the last step, the numbers eval_results.txt holds
        assert list(points) == [STEPS], tag
        np.testing.assert_allclose(points[STEPS], results[tag], rtol=1e-6, err_msg=tag)
    assert evals["eval_batches"][STEPS] == 8  # 64 held-out records in batches of 8


def test_the_summary_says_steps_evaluation_and_speed(run):
    with open(os.path.join(run["model_dir"], "training_summary.txt")) as f:
        summary = f.read()
    assert "steps: 60 of 60" in summary and "eval: " in summary and "speed (median loop)" in summary


def test_the_model_dir_reloads_with_its_config_and_evaluates_to_the_runs_numbers(run):
    model = load_pretrainer(run["model_dir"])
    assert model.config.hidden_size == 16 and model.config.vocab_size == 64
    results = read_eval_results(run["model_dir"])
    again = evaluate(model, pretraining_dataset(InputSpec(run["data"]["eval"], 32, 6, 8, is_training=False)),
                     max_steps=100)
    for name in ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_loss"):
        np.testing.assert_allclose(again[name], results[name], rtol=1e-5, err_msg=name)


def test_running_a_finished_run_again_trains_nothing_and_evaluates_again(run, tmp_path):
    model_dir = str(tmp_path / "run")
    shutil.copytree(run["model_dir"], model_dir)  # the other tests read the original
    flags = [f"--model_dir={model_dir}" if flag.startswith("--model_dir=") else flag for flag in run["flags"]]
    again = run_cli("pretrain", *flags)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "nothing left to train" in again.stderr and "steps: 60 of 60" in again.stderr
    assert "step 10/60" not in again.stderr
    assert read_eval_results(model_dir) == read_eval_results(run["model_dir"])

"""`bert-pretrain` end to end in its own process: outputs, resume, and runs stopped by SIGTERM or SIGKILL that end
with the same weights as an uninterrupted run."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

from bert_tf.cli import pretrain
from bert_tf.cli.command import compose
from bert_tf.cli.flag_parsing import command_flag_values, parse_command_line
from bert_tf.model_dir import load_pretrainer
from bert_tf.training.controller import Controller
from bert_tf.training.pretraining import run_pretraining
from bert_tf.training.recipe import Recipe, RecipeError, load_recipe
from bert_tf.training.training_log import read_history
from helpers import REPO, latest_step, run_cli, start_cli, tiny_model_section
from pretraining_records import pretrain_flags, write_records, write_two_phase_recipe, write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    return {"root": root, "vocab": write_vocab(root / "vocab.txt"),
            "seq16": write_records(root / "seq16.tfrecord", 256, 16, 4, seed=0),
            "seq32": write_records(root / "seq32.tfrecord", 256, 32, 6, seed=1),
            "eval": write_records(root / "eval.tfrecord", 64, 32, 6, seed=2),
            "general16": write_records(root / "general16.tfrecord", 128, 16, 4, seed=3)}


def weights(model_dir):
    return {v.path: v.numpy() for v in load_pretrainer(model_dir).trainable_variables}


def test_cli_errors_name_the_cause(data, tmp_path):
    recipe = write_two_phase_recipe(data, "cli_errors", (40, 20), save_every=20, dropout=0.1)
    done = run_cli("pretrain", *pretrain_flags(data, recipe, str(tmp_path / "x"), "--max_seq_length=16"), timeout=120)
    assert done.returncode == 2
    assert ("--max_seq_length was given 1 time(s) but recipe 'cli_errors' has 2 phases (seq16, seq32): give it once "
            "per phase, in order.") in done.stderr


# The CLI's flags that are not recipe fields: where the run goes and how fast the hardware is.
NOT_RECIPE_FLAGS = {"config", "model_dir", "strategy", "tpu", "all_reduce_implementation", "peak_tflops", "set",
                    "accept_recipe_change"}


def composed_config(argv):
    """The configuration bert-pretrain composes from `argv`, without its input checks (the paths here are made up)."""
    command = dataclasses.replace(pretrain.COMMAND, check=None)
    return compose(command, parse_command_line(command, argv)[0])


def composed_recipe(argv):
    return composed_config(argv).recipe.to_dict()


def test_every_override_flag_lands_in_the_recipe(data, tmp_path):
    recipe = write_two_phase_recipe(data, "cli_flags", (40, 20), save_every=20, dropout=0.1)
    # Every override flag at a value unlike both the recipe's and the flag's default.
    overrides = {"input_file": ["p1-*.tfrecord", "p2-*.tfrecord"], "bert_config_file": "/cfg/bert_config.json",
                 "init_checkpoint": "/released/uncased_L-2_H-16", "vocab_file": "/released/vocab.txt",
                 "train_batch_size": 32, "num_train_steps": 120, "num_warmup_steps": 12, "learning_rate": 7e-4,
                 "max_seq_length": [12, 24], "max_predictions_per_seq": [3, 5], "save_checkpoints_steps": 30,
                 "iterations_per_loop": 6, "max_micro_batch_size": 4, "mixed_precision": "mixed_bfloat16",
                 "jit_compile": True, "eval_input_file": "/heldout/*.tfrecord", "optimizer": "lamb",
                 "dynamic_masking": True, "row_packing": True, "use_next_sentence": False, "seed": 99,
                 "platform": "cpu"}
    argv = ["bert-pretrain", f"--config={recipe}", f"--model_dir={tmp_path / 'run'}"]
    for name, value in overrides.items():
        if isinstance(value, bool):
            argv.append(f"--{name}" if value else f"--no{name}")
        else:
            argv += [f"--{name}={v}" for v in (value if isinstance(value, list) else [value])]
    settings = argv[:3] + ["--set=optimizer.beta_1=0.95", "--set=phases.1.max_seq_length=24",
                           "--set=model.hidden_dropout_prob=0"]
    # No flag of the CLI is left out of this test: a new one must be wired into the recipe and added above.
    assert set(command_flag_values(pretrain.COMMAND)) == set(overrides) | NOT_RECIPE_FLAGS
    got, untouched, set_by_path = (composed_recipe(a) for a in (argv, argv[:3], settings))
    assert set_by_path["optimizer"]["beta_1"] == 0.95 and set_by_path["model"]["hidden_dropout_prob"] == 0
    assert [p["max_seq_length"] for p in set_by_path["phases"]] == [16, 24]

    assert [p["input_file"] for p in got["phases"]] == ["p1-*.tfrecord", "p2-*.tfrecord"]
    assert [p["max_seq_length"] for p in got["phases"]] == [12, 24]
    assert [p["max_predictions_per_seq"] for p in got["phases"]] == [3, 5]
    assert [p["num_steps"] for p in got["phases"]] == [80, 40]  # 120 steps split 2:1 as the recipe's 40/20
    assert got["model"]["bert_config_file"] == "/cfg/bert_config.json" and got["model"]["preset"] is None
    assert got["model"]["hidden_size"] == 16  # the recipe's model overrides still apply on the config file
    assert got["init_checkpoint"] == "/released/uncased_L-2_H-16" and got["vocab_file"] == "/released/vocab.txt"
    assert (got["train_batch_size"], got["num_train_steps"], got["num_warmup_steps"]) == (32, 120, 12)
    assert got["learning_rate"] == 7e-4
    assert (got["save_checkpoints_steps"], got["iterations_per_loop"], got["max_micro_batch_size"]) == (30, 6, 4)
    # The platform's settings come first: its float32 gives way to the flag's mixed_bfloat16.
    assert got["platform"] == "cpu" and untouched["platform"] is None
    assert got["mixed_precision"] == "mixed_bfloat16" and got["jit_compile"] is True
    assert got["eval"]["input_file"] == "/heldout/*.tfrecord"
    assert got["optimizer"]["name"] == "lamb" and got["optimizer"]["weight_decay_rate"] == 0.01
    assert got["dynamic_masking"]["enabled"] is True and got["use_next_sentence"] is False
    assert got["row_packing"]["enabled"] is True
    assert got["seed"] == 99
    # Without overrides the recipe is the file's, field for field.
    assert untouched == json.loads(json.dumps(load_recipe(recipe).to_dict()))


def test_set_and_a_config_file_reach_the_run_options_too(data, tmp_path):
    recipe = write_two_phase_recipe(data, "cli_run_options", (40, 20), save_every=20, dropout=0.1)
    argv = ["bert-pretrain", f"--config={recipe}", "--model_dir=run"]
    # Recipe fields by their own path, run options as run.FIELD.
    config = composed_config(argv + ["--set=run.strategy=one_device", "--set=run.peak_tflops=2.5",
                                     "--set=learning_rate=3e-4"])
    assert (config.run.strategy, config.run.peak_tflops, config.recipe.learning_rate) == ("one_device", 2.5, 3e-4)
    with pytest.raises(RecipeError, match=r"^command line: run\.strategy='gpus' must be one of tpu, mirrored"):
        composed_config(argv + ["--set=run.strategy=gpus"])
    # A file whose top level is exactly recipe and run holds both; the flags still win over it.
    whole = tmp_path / "whole.yaml"
    whole.write_text(yaml.safe_dump({"recipe": load_recipe(recipe).to_dict(),
                                     "run": {"strategy": "one_device", "peak_tflops": 1.5}}))
    config = composed_config(["bert-pretrain", f"--config={whole}", "--model_dir=run", "--peak_tflops=4"])
    assert (config.run.strategy, config.run.peak_tflops, config.run.model_dir) == ("one_device", 4.0, "run")
    assert config.recipe == load_recipe(recipe)
    # Any other top level is a recipe, whose keys are checked as such.
    whole.write_text(yaml.safe_dump({"recipe": load_recipe(recipe).to_dict(), "runs": {}}))
    with pytest.raises(RecipeError, match=r"^whole\.yaml: unknown field\(s\) \['recipe', 'runs'\]"):
        composed_config(["bert-pretrain", f"--config={whole}", "--model_dir=run"])


def run_until_checkpoint(args, model_dir, step, sig):
    """Starts `bert-pretrain ARGS`, sends `sig` as soon as the latest checkpoint is that of `step` (or later), and
    returns the process after it exits.

    Waits on the `checkpoint` state file, not on `ckpt-N.index`: the index is written before the state file names
    it, so a kill in between would leave the previous checkpoint as the latest."""
    process = start_cli("pretrain", *args)
    deadline = time.monotonic() + 240
    try:
        while (latest_step(model_dir) or 0) < step:
            assert process.poll() is None, process.communicate()[1][-3000:]
            assert time.monotonic() < deadline, f"no checkpoint of step {step} appeared in time"
            time.sleep(0.01)
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return process, stderr


def test_sigkill_resumes_to_the_same_weights(data, tmp_path):
    steps = (300, 200)
    # Dropout on: its RNG resumes too.
    recipe = write_two_phase_recipe(data, "cli_resume", steps, save_every=100, dropout=0.1)
    overrides = {"phases.input_file": [data["seq16"], data["seq32"]], "vocab_file": data["vocab"]}
    reference = str(tmp_path / "uninterrupted")
    run_pretraining(load_recipe(recipe).override(overrides), reference, peak_tflops=1.0)
    expected = weights(reference)

    # SIGKILL in phase 2: nothing is saved on the way out; the resumed run restarts from the last checkpoint,
    # in phase 2 with the iterator where it was. Its checkpoints are written asynchronously: each holds the state
    # of the step it is named after, although training went on while it was written.
    killed = str(tmp_path / "sigkill")
    process, stderr = run_until_checkpoint(pretrain_flags(data, recipe, killed, "--set=async_checkpoints=true"),
                                           killed, 300, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    assert "Writing checkpoint" in stderr and "skipped" not in stderr  # TensorFlow skips what it cannot copy
    killed_step = latest_step(killed)
    assert 300 <= killed_step < 500
    resumed = run_pretraining(load_recipe(recipe).override({**overrides, "async_checkpoints": True}), killed,
                              peak_tflops=1.0)
    assert resumed.completed and resumed.step == 500

    got = weights(killed)
    for path, value in expected.items():
        np.testing.assert_array_equal(got[path], value, err_msg=path)
    steps_logged = [r["step"] for r in read_history(os.path.join(killed, "train_metrics.jsonl"))]
    assert steps_logged == list(range(10, 501, 10))


def test_sigterm_mid_loop_saves_within_seconds_and_resumes_exactly(data, tmp_path):
    """iterations_per_loop=1000 as in the paper recipes: SIGTERM during the second loop stops the run after the
    current step (not at the loop's end), with a checkpoint, within 10 s; the resumed run ends bit-identical and
    logs the rows of an uninterrupted run."""
    recipe = {
        "name": "cli_sigterm",
        "model": tiny_model_section(num_hidden_layers=1, max_position_embeddings=16),
        "train_batch_size": 4, "num_train_steps": 2000, "num_warmup_steps": 10, "learning_rate": 1e-3,
        "save_checkpoints_steps": 1000, "iterations_per_loop": 1000,
        "phases": [{"name": "seq16", "num_steps": 2000, "max_seq_length": 16, "max_predictions_per_seq": 4}]}
    path = data["root"] / "cli_sigterm.yaml"
    path.write_text(yaml.safe_dump(recipe))
    args = [f"--config={path}", f"--input_file={data['seq16']}", f"--vocab_file={data['vocab']}", "--peak_tflops=1"]
    stopped = str(tmp_path / "sigterm")
    process = start_cli("pretrain", *args, f"--model_dir={stopped}")
    try:
        deadline = time.monotonic() + 300
        while (latest_step(stopped) or 0) < 1000:
            assert process.poll() is None, process.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no checkpoint of step 1000 appeared in time"
            time.sleep(0.01)
        time.sleep(0.5)
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        seconds = time.monotonic() - signalled
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, stderr[-3000:]
    assert seconds < 10, f"the run took {seconds:.1f} s to stop after SIGTERM: {stderr[-1500:]}"
    assert "SIGTERM received" in stderr and "re-run the same command to resume" in stderr
    saved_step = latest_step(stopped)
    assert 1000 < saved_step < 2000, saved_step  # saved within the loop, not at its end
    print(f"SIGTERM at step ~{saved_step}: exit 143 after {seconds:.2f} s")

    resumed = run_cli("pretrain", *args, f"--model_dir={stopped}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"(step {saved_step})" in resumed.stderr
    reference = str(tmp_path / "uninterrupted")
    uninterrupted = run_cli("pretrain", *args, f"--model_dir={reference}")
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-3000:]
    expected, got = weights(reference), weights(stopped)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    # The log too: the row of the span the signal cut (steps 1000-2000) covers the steps before and after it
    # (to float32 rounding: the loop sums a span's metrics in float32, in two calls here and one there).
    expected_rows, rows = (read_history(os.path.join(d, "train_metrics.jsonl")) for d in (reference, stopped))
    assert [r["step"] for r in rows] == [r["step"] for r in expected_rows] == [1000, 2000]
    for row, expected_row in zip(rows, expected_rows):
        for name in ("loss", "masked_lm_loss", "masked_lm_accuracy", "next_sentence_accuracy", "grad_norm"):
            np.testing.assert_allclose(row[name], expected_row[name], rtol=1e-5, err_msg=name)


def one_phase_recipe(data, name, steps, **fields):
    """A one-phase recipe at 16 tokens, written to a YAML file."""
    recipe = {"name": name, "model": tiny_model_section(num_hidden_layers=1, max_position_embeddings=16),
              "train_batch_size": 8, "num_train_steps": steps, "num_warmup_steps": 2, "learning_rate": 3e-3,
              "save_checkpoints_steps": 10, "iterations_per_loop": 5,
              "phases": [{"name": "seq16", "num_steps": steps, "max_seq_length": 16, "max_predictions_per_seq": 4}],
              **fields}
    path = data["root"] / f"{name}.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return str(path)


def test_mixed_inputs_set_on_the_command_line_train_and_log_their_shares(data, tmp_path):
    recipe = one_phase_recipe(data, "cli_mixed", 10)
    model_dir = str(tmp_path / "run")
    done = run_cli("pretrain", f"--config={recipe}", f"--model_dir={model_dir}", f"--input_file={data['seq16']}",
                   f"--vocab_file={data['vocab']}", "--peak_tflops=1",
                   f"--set=phases.0.mixed_inputs=[{{input_file: {data['general16']}, share: 0.2}}]")
    assert done.returncode == 0, done.stderr[-3000:]
    shares = f"{data['seq16']} at 0.8, {data['general16']} at 0.2"
    assert f"Phase seq16 mixes its input sets: {shares}." in done.stderr
    assert "step 10/10 [seq16] loss " in done.stderr
    with open(os.path.join(model_dir, "training_summary.txt")) as f:
        assert f"phases: seq16 10 steps at 16/4, global batch 8 (records from {shares})" in f.read()
    with open(os.path.join(model_dir, "recipe.yaml")) as f:
        recorded = yaml.safe_load(f)
    assert recorded["phases"][0]["mixed_inputs"] == [{"input_file": data["general16"], "share": 0.2}]
    # The recipe only (and its format's version), no run options.
    assert set(recorded) == {field.name for field in dataclasses.fields(Recipe)} | {"format_version"}


def test_a_stopped_run_with_mixed_inputs_resumes_bit_identically(data, tmp_path, monkeypatch):
    """Stopped mid-phase as on SIGTERM (the controller told so at step 15: it saves, then returns), the resumed run
    restores the mixed input's iterator (each set's reader and the draws between them) and ends with the weights of
    an uninterrupted run."""
    mixed = [{"input_file": data["general16"], "share": 0.3}]
    recipe = load_recipe(one_phase_recipe(data, "mixed_resume", 30, model=tiny_model_section(
        num_hidden_layers=1, max_position_embeddings=16, hidden_dropout_prob=0.1))).override(
        {"phases.input_file": [data["seq16"]], "vocab_file": data["vocab"], "phases.mixed_inputs": [mixed]})
    reference = str(tmp_path / "uninterrupted")
    run_pretraining(recipe, reference, peak_tflops=1.0)

    stopped = str(tmp_path / "stopped")
    with monkeypatch.context() as patch:
        patch.setattr(Controller, "preemption_requested", lambda controller: controller.trainer.step >= 15)
        result = run_pretraining(recipe, stopped, peak_tflops=1.0)
    assert result.preempted and 15 <= latest_step(stopped) < 30
    resumed = run_pretraining(recipe, stopped, peak_tflops=1.0)
    assert resumed.completed and resumed.step == 30
    expected, got = weights(reference), weights(stopped)
    for path, value in expected.items():
        np.testing.assert_array_equal(got[path], value, err_msg=path)
    # The preflight checks each set's files as the phase's own: a set of other lengths fails naming it.
    bad = recipe.override({"phases.0.mixed_inputs": [{"input_file": data["seq32"], "share": 0.3}]})
    with pytest.raises(ValueError, match=r"^phase 'seq16' mixed_inputs\[0\]: Records in .*seq32\.tfrecord do not "
                                         r"match max_seq_length=16"):
        run_pretraining(bad, str(tmp_path / "bad"), peak_tflops=1.0)


def short_run_args(data, model_dir, steps=1500, iterations_per_loop=50, save_checkpoints_steps=10_000):
    """`bert-pretrain` flags of a one-phase run of the tiny model (about 2 ms a step here) that writes no checkpoint
    of its own before its end, unless `save_checkpoints_steps` says so."""
    recipe = one_phase_recipe(data, f"short_{steps}", steps, iterations_per_loop=iterations_per_loop,
                              save_checkpoints_steps=save_checkpoints_steps)
    return [f"--config={recipe}", f"--model_dir={model_dir}", f"--input_file={data['seq16']}",
            f"--vocab_file={data['vocab']}", "--peak_tflops=1"]


def signal_while_training(args, *signals):
    """Starts `bert-pretrain ARGS`, sends `signals` once it has logged its second row (it trains), and returns (the
    process after it exited, its stderr)."""
    process = start_cli("pretrain", *args)
    lines = []
    try:
        for line in process.stderr:
            lines.append(line)
            if "step 100/" in line:
                break
        assert process.poll() is None, "".join(lines)[-3000:]
        for sig in signals:
            process.send_signal(sig)
        _, rest = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return process, "".join(lines) + rest


def test_ctrl_c_saves_within_the_step_and_the_same_command_resumes(data, tmp_path):
    model_dir = str(tmp_path / "run")
    args = short_run_args(data, model_dir)
    process, stderr = signal_while_training(args, signal.SIGINT)
    assert process.returncode == 130, stderr[-3000:]
    saved = latest_step(model_dir)  # the run's only checkpoint before its end is the one Ctrl-C wrote
    assert saved is not None and 100 <= saved < 1500, stderr[-3000:]
    assert "SIGINT received: saving a checkpoint after the current step" in stderr
    last = stderr.strip().splitlines()[-1]
    assert last == (f"bert-pretrain: stopped by SIGINT (Ctrl-C) at step {saved} after saving {model_dir}/ckpt-{saved}; "
                    f"run the same command again to resume."), last
    assert "Traceback" not in stderr
    resumed = run_cli("pretrain", *args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"(step {saved})" in resumed.stderr and latest_step(model_dir) == 1500


# Ctrl-C while the watcher waits for the loop to save (here: forever), then Ctrl-C again.
SECOND_CTRL_C = """
import os, signal, sys, time
from bert_tf.training.preemption import PreemptionWatcher
with PreemptionWatcher() as watcher:
    os.kill(os.getpid(), signal.SIGINT)
    while not watcher.requested():
        time.sleep(0.01)
    print(watcher.signal_name, flush=True)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(60)
"""


def test_a_second_ctrl_c_stops_at_once():
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", SECOND_CTRL_C], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and time.monotonic() - started < 30, done.stderr[-3000:]
    assert done.stdout.strip() == "SIGINT"
    assert "SIGINT received: saving a checkpoint after the current step" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == ("Interrupted again (Ctrl-C): stopped at once, without saving; the "
                                                    "latest checkpoint stays the last one written.")


def test_a_changed_recipe_is_refused_on_resume_until_accepted_and_every_recipe_is_kept(data, tmp_path):
    model_dir = str(tmp_path / "run")
    args = short_run_args(data, model_dir, steps=10, iterations_per_loop=5, save_checkpoints_steps=10)
    first = run_cli("pretrain", *args)
    assert first.returncode == 0, first.stderr[-3000:]
    with open(os.path.join(model_dir, "recipe.yaml")) as f:
        recorded = f.read()

    # Another learning rate and batch: refused before a step, in one line naming both and the flag.
    refused = run_cli("pretrain", *args, "--num_train_steps=20", "--learning_rate=1e-2", "--train_batch_size=4")
    assert refused.returncode == 2, refused.stderr[-3000:]
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith(f"bert-pretrain: error: {model_dir} was trained to step 10 under another recipe ("), line
    assert "learning_rate: 0.003 -> 0.01" in line and "train_batch_size: 8 -> 4" in line
    assert "Pass --accept_recipe_change" in line and "num_train_steps" not in line  # longer is no difference to accept
    assert latest_step(model_dir) == 10 and sorted(f for f in os.listdir(model_dir) if f.startswith("recipe")) == [
        "recipe.yaml"]

    # A longer run alone is accepted as before, saying what it changes for the rest of the run.
    longer = run_cli("pretrain", *args, "--num_train_steps=20")
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert ("For the rest of the run: phases now end at steps seq16 20 (were 10); the learning rate at step 10 is "
            "0.0015 (was 0) and decays to 0 at step 20 (was 10).") in longer.stderr
    assert latest_step(model_dir) == 20

    # Accepted: it trains, and the directory keeps each recipe it was trained under.
    accepted = run_cli("pretrain", *args, "--num_train_steps=30", "--learning_rate=1e-2", "--accept_recipe_change")
    assert accepted.returncode == 0, accepted.stderr[-3000:]
    assert "with the recipe changed (learning_rate: 0.003 -> 0.01" in accepted.stderr
    assert latest_step(model_dir) == 30
    with open(os.path.join(model_dir, "recipe.yaml")) as f:
        assert f.read() == recorded
    history = {name: yaml.safe_load(open(os.path.join(model_dir, name))) for name in ("recipe-2.yaml",
                                                                                      "recipe-3.yaml")}
    assert (history["recipe-2.yaml"]["num_train_steps"], history["recipe-2.yaml"]["learning_rate"]) == (20, 3e-3)
    assert (history["recipe-3.yaml"]["num_train_steps"], history["recipe-3.yaml"]["learning_rate"]) == (30, 1e-2)
    with open(os.path.join(model_dir, "recipe-3.yaml")) as f:
        assert f.readline().startswith("# from step 20: learning_rate: 0.003 -> 0.01")

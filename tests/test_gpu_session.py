"""tools/xla/gpu_session.py: the prepared GPU session. Its plan (most important first, flash attention only after it
agreed on the slice) and its resumption are checked here (default tier); the whole session runs on the tiny model on
this CPU, where the flash tasks fail as they must without cuDNN and a second call has nothing left to do (large)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from gpu_session import SCALES, exports, main, padded_batch, parse_args, read_ledger, run_session, tasks

from bench.synthetic_batch import synthetic_batch
from helpers import REPO, TOOLS_XLA, python_path_env

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

JAX_PYTHON = os.path.join(REPO, ".venv-jax", "bin", "python")
SESSION = os.path.join(TOOLS_XLA, "gpu_session.py")


def test_the_plan_runs_the_card_and_todays_step_first_and_flash_only_after_the_slice_agreed():
    plan = tasks(SCALES["paper"], "steps", "out", "run")
    names = [task.name for task in plan]
    assert names[:9] == ["matmul_bf16", "profile_large_128_einsum", "hf_large_128", "profile_large_512_einsum",
                         "hf_large_512", "profile_base_128_einsum", "hf_base_128", "profile_base_512_einsum",
                         "hf_base_512"]
    assert [task.stage for task in plan] == sorted(task.stage for task in plan)
    assert names[9:11] == ["agree_slice4_128", "profile_slice4_128_einsum"]
    flash = [task for task in plan if "cudnn_flash" in task.name]
    assert len(flash) == 6 and all(task.needs == f"agree_slice4_{task.name.split('_')[2]}" for task in flash
                                   if task.name.startswith("profile_slice"))
    assert {task.needs for task in flash if task.stage == 3} == {"agree_slice4_128", "agree_slice4_512"}
    # Every step a task runs is one --prepare exports, and each task's limit leaves it the time it needs.
    steps = set(exports(SCALES["paper"]))
    assert len(steps) == 14
    named = {arg.split("/", 1)[1] for task in plan for arg in task.argv if arg.startswith("steps/")}
    assert named == steps
    assert all(task.min_s <= task.timeout_s for task in plan)
    # HF runs at our micro-batches: 64 x 4 for BERT-large at 512.
    assert "--micro_batch=64" in next(t for t in plan if t.name == "hf_large_512").argv
    layer_norm = next(t for t in plan if t.name.endswith("cudnn_layer_norm"))
    assert dict(layer_norm.env) == {"XLA_FLAGS": "--xla_gpu_enable_cudnn_layer_norm=true"}


def test_a_call_without_time_leaves_every_task_and_a_finished_ledger_leaves_none(tmp_path):
    out = str(tmp_path)
    assert run_session(SCALES["paper"], "steps", out, deadline_s=0, stages={1, 2, 3}) == 2
    assert read_ledger(os.path.join(out, "gpu_session", "ledger.jsonl")) == {}
    with open(os.path.join(out, "gpu_session", "ledger.jsonl"), "w", encoding="utf-8") as f:
        for task in tasks(SCALES["paper"], "steps", out, "run"):
            f.write(json.dumps({"task": task.name, "status": "ok", "agreement": "ok"}) + "\n")
    assert run_session(SCALES["paper"], "steps", out, deadline_s=0, stages={1, 2, 3}) == 0


def test_the_command_refuses_missing_steps_and_keeps_a_zero_deadline(tmp_path, capsys):
    steps, out = tmp_path / "steps", tmp_path / "out"
    assert main([f"--steps={steps}", f"--out={out}"]) == 2
    assert "lacks large_128_einsum" in capsys.readouterr().err
    for name in exports(SCALES["paper"]):
        (steps / name).mkdir(parents=True)
        (steps / name / "manifest.json").write_text("{}")
    assert main([f"--steps={steps}", f"--out={out}", "--deadline_s=0"]) == 2  # nothing starts with no time
    assert read_ledger(str(out / "gpu_session" / "ledger.jsonl")) == {}


def test_the_session_runs_every_task_unless_given_a_deadline(tmp_path):
    assert parse_args([]).deadline_s is None and parse_args(["--deadline_s=600"]).deadline_s == 600
    # Without a deadline nothing waits: with every task in the ledger, the session is done.
    out = str(tmp_path)
    os.makedirs(os.path.join(out, "gpu_session"))
    with open(os.path.join(out, "gpu_session", "ledger.jsonl"), "w", encoding="utf-8") as f:
        for task in tasks(SCALES["paper"], "steps", out, "run"):
            f.write(json.dumps({"task": task.name, "status": "ok", "agreement": "ok"}) + "\n")
    assert run_session(SCALES["paper"], "steps", out, deadline_s=None, stages={1, 2, 3}) == 0


def test_the_slices_batch_is_padded_at_the_end_of_rows_and_predicts_real_tokens_only():
    batch = synthetic_batch(30522, 8, 128, 20, seed=3)
    padded = padded_batch(batch)
    lengths = padded["input_mask"].sum(axis=1)
    assert lengths.tolist() == [128, 112, 96, 80] * 2
    for row, length in enumerate(lengths):
        assert padded["input_mask"][row, :length].all() and not padded["input_word_ids"][row, length:].any()
        positions = padded["masked_lm_positions"][row]
        assert len(set(positions)) == 20 and 1 <= positions.min() and positions.max() <= length - 2
    assert np.array_equal(padded["masked_lm_ids"], batch["masked_lm_ids"])  # what is predicted is unchanged
    assert batch["input_mask"].all()  # the exported batch itself is left as it was


@pytest.mark.large
def test_the_tiny_session_runs_on_this_cpu_and_a_second_call_resumes_with_nothing_left(tmp_path):
    if not os.path.exists(JAX_PYTHON):
        pytest.fail(f"{JAX_PYTHON} is missing: run `make jax-venv` (jax 0.11.2 on Python 3.12).")
    steps, out = str(tmp_path / "steps"), str(tmp_path / "results")
    done = subprocess.run([sys.executable, SESSION, "--prepare", "--scale=tiny", f"--steps={steps}"],
                          env=python_path_env(REPO), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    session = [JAX_PYTHON, SESSION, "--scale=tiny", f"--steps={steps}", f"--out={out}", f"--jax_python={JAX_PYTHON}",
               f"--torch_python={sys.executable}"]
    done = subprocess.run(session, env=python_path_env(REPO), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    ledger = read_ledger(os.path.join(out, "gpu_session", "ledger.jsonl"))
    statuses = {name: entry["status"] for name, entry in ledger.items()}
    assert statuses == {"matmul_bf16": "ok", "profile_tiny_16_einsum": "ok", "hf_tiny_16": "ok",
                        "agree_slice1_16": "failed (exit 1)", "profile_slice1_16_einsum": "ok",
                        "profile_slice1_16_einsum_cudnn_layer_norm": "ok", "hf_tiny_16_compiled": "ok"}
    # XLA:CPU has no cuDNN: the flash step does not compile here, so nothing measures it after the failed agreement.
    with open(os.path.join(out, "gpu_session", "logs", "agree_slice1_16.log"), encoding="utf-8") as f:
        assert "cudnn$fmha" in f.read()
    rows = {script: [json.loads(line) for line in open(os.path.join(out, script, name), encoding="utf-8")]
            for script, name in (("profile_xla_step", "results.jsonl"), ("bench_hf_bert", "results.jsonl"),
                                 ("bench_hf_bert", "matmul.jsonl"))}
    assert [row["variant"] for row in rows["profile_xla_step"]] == [
        "einsum", "slice1_einsum", "slice1_einsum_cudnn_layer_norm"]
    assert rows["profile_xla_step"][2]["xla_flags"] == "--xla_gpu_enable_cudnn_layer_norm=true"
    assert {row["run_id"] for rows_ in rows.values() for row in rows_} == {ledger["matmul_bf16"]["run_id"]}
    again = subprocess.run(session, env=python_path_env(REPO), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "---" not in again.stdout, again.stdout[-2000:]
    assert read_ledger(os.path.join(out, "gpu_session", "ledger.jsonl")) == ledger

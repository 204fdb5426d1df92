"""tools/xla/agree_xla_steps.py: two exported steps of one model from the same weights. On this CPU (jax 0.11.2 in
`.venv-jax`), a step agrees with itself to the last bit, and one weight moved in the candidate fails the check."""

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, TOOLS_XLA, python_path_env

JAX_PYTHON = os.path.join(REPO, ".venv-jax", "bin", "python")
AGREE = os.path.join(TOOLS_XLA, "agree_xla_steps.py")

pytestmark = pytest.mark.large


def test_a_step_agrees_with_itself_and_a_moved_weight_fails(tmp_path):
    if not os.path.exists(JAX_PYTHON):
        pytest.fail(f"{JAX_PYTHON} is missing: run `make jax-venv` (jax 0.11.2 on Python 3.12).")
    step = str(tmp_path / "tiny")
    done = subprocess.run([sys.executable, os.path.join(TOOLS_XLA, "export_xla_step.py"), "--preset=tiny",
                           "--precision=mixed_bfloat16", "--batch=8", "--seq=16", "--preds=4", "--no_check",
                           "--set=model.attention_probs_dropout_prob=0.0", f"--out={step}"],
                          env=python_path_env(REPO), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = tmp_path / "results"
    same = subprocess.run([JAX_PYTHON, AGREE, step, step, "--runs=1", f"--results={results}", "--run_id=t"],
                          env=python_path_env(REPO), capture_output=True, text=True, timeout=600)
    assert same.returncode == 0, same.stdout[-2000:] + same.stderr[-3000:]
    assert same.stdout.strip().splitlines()[-1] == "agreement: ok"
    rows = [json.loads(line) for line in (results / "agree_xla_steps" / "results.jsonl").read_text().splitlines()]
    assert [(row["variant"], row["worst_error"], row["batch"], row["micro_batch"]) for row in rows] == [
        ("einsum_nodrop", 0.0, 8, 8)] * 2
    moved = subprocess.run([JAX_PYTHON, AGREE, step, step, "--runs=1", "--perturb", f"--results={results}"],
                           env=python_path_env(REPO), capture_output=True, text=True, timeout=600)
    assert moved.returncode == 1
    assert moved.stdout.strip().splitlines()[-1].startswith("agreement: FAILED (bert/embeddings/word_embeddings "
                                                             "differs by")

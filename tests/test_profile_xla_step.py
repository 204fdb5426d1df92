"""tools/xla/profile_xla_step.py: where a compiled step's device time goes. Its grouping rules read a compiled program
written here in XLA:GPU's words (default tier); the whole tool runs a tiny exported step under jax 0.11.2's profiler
on this CPU (large tier: it needs `.venv-jax`), where its figures mean nothing but every stage runs."""

import json
import os
import subprocess
import sys

import pytest
from profile_xla_step import GROUPS, group_of, parse_program

from helpers import REPO, TOOLS_XLA, python_path_env

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

JAX_PYTHON = os.path.join(REPO, ".venv-jax", "bin", "python")

# A few instructions as XLA:GPU writes them after optimization (names, targets and configs as in its dumps).
GPU_PROGRAM = os.path.join(REPO, "tests", "fixtures", "xla_gpu_program_sample.hlo")


def test_each_kernel_goes_to_the_group_of_what_it_computes():
    with open(GPU_PROGRAM, encoding="utf-8") as f:
        program = parse_program(f.read())
    expected = {
        "custom-call.3": "encoder matmuls",
        "custom-call.7": "attention batched matmuls",  # two batch dimensions: [B, A] x [T, d]
        "custom-call.9": "head and embedding matmuls",
        "custom-call.11": "cuDNN flash attention",
        "loop_softmax_fusion": "softmax, mask, dropout",  # TensorFlow's "self_1" scope is the attention's too
        "input_ln_fusion.2": "LayerNorm",
        "transpose_fusion.4": "copies and transposes",  # a fusion of data movement only
        "loop_gelu_fusion.5": "GELU and other element-wise",
        "rng-bit-generator.1": "random-number generation",
        "loop_adam_fusion.6": "optimizer and clipping",
        "loop_xent_fusion.8": "losses",
        "copy.1": "copies and transposes",
    }
    got = {name: group_of(program[name]) for name in expected}
    assert got == expected
    assert set(expected.values()) <= set(GROUPS)
    assert program["custom-call.7"].batch_dims == 2 and program["custom-call.3"].batch_dims == 0
    assert program["while.2"].opcode == "while"  # a container: its span is not counted beside its body's kernels
    assert group_of(None, "Memcpy DtoD") == "copies and transposes" and group_of(None, "void kernel<>") == "other"


@pytest.mark.large
def test_the_profile_runs_an_exported_step_on_this_cpu_and_writes_its_row(tmp_path):
    if not os.path.exists(JAX_PYTHON):
        pytest.fail(f"{JAX_PYTHON} is missing: run `make jax-venv` (jax 0.11.2 on Python 3.12).")
    step = str(tmp_path / "tiny")
    done = subprocess.run([sys.executable, os.path.join(TOOLS_XLA, "export_xla_step.py"), "--preset=tiny",
                           "--precision=float32", "--batch=8", "--seq=16", "--preds=4", "--no_check", f"--out={step}"],
                          env=python_path_env(REPO), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = tmp_path / "results"
    done = subprocess.run([JAX_PYTHON, os.path.join(TOOLS_XLA, "profile_xla_step.py"), step, "--runs=2",
                           "--top=5", f"--results={results}", "--run_id=test"],
                          env=python_path_env(REPO), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (row,) = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    assert {k: row[k] for k in ("stack", "variant", "preset", "seq", "batch", "micro_batch", "run_id")} == {
        "stack": "bert_tf", "variant": "einsum", "preset": "tiny", "seq": 16, "batch": 8, "micro_batch": 8,
        "run_id": "test"}
    assert row["sequences_per_s"] > 0 and row["device"] == "cpu" and len(row["top_kernels"]) == 5
    # Every kernel is in one group, and the matmuls of the tiny model's two layers and its head are found.
    assert abs(sum(row["groups"].values()) - row["device_ms"]) < 0.01 * row["device_ms"] + 0.01
    for group in ("encoder matmuls", "head and embedding matmuls", "attention batched matmuls", "LayerNorm",
                  "optimizer and clipping", "random-number generation", "softmax, mask, dropout"):
        assert row["groups"].get(group, 0) > 0, (group, row["groups"])
    assert "groups (CPU time summed over XLA's threads per step):" in done.stdout

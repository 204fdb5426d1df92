"""XLA:TPU without a TPU: the tiny step a TPU run builds (`tools/xla/plan_platforms.py export`: the loop's program,
TPUStrategy's update branch, micro-batch accumulation) compiles for one chip of TPU v4 and of TPU v5e with libtpu
(`plan_platforms.py compile` in `.venv-tpu`, `make tpu-venv`), and its buffers are the ones recorded in
tools/xla/results/plan_platforms/xla_tpu.jsonl, the rows configs/platforms.yaml's `xla_tpu_estimates` come from.

The band: arguments (the weights, Adam's slots, the batch) exactly, temporaries within 10% (the same libtpu gives
the same figures; the band is for a libtpu that schedules differently), and nothing rematerialized.
"""

import json
import os
import subprocess
import sys

import pytest

from helpers import python_path_env

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPU_PYTHON = os.path.join(REPOSITORY, ".venv-tpu", "bin", "python")
TOOL = os.path.join(REPOSITORY, "tools", "xla", "plan_platforms.py")
RECORDED = os.path.join(REPOSITORY, "tools", "xla", "results", "plan_platforms", "xla_tpu.jsonl")
STEP = "tiny_128_mb8"
TEMPORARIES_BAND = 0.10

pytestmark = pytest.mark.large


def recorded_line(device):
    with open(RECORDED, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    matches = [line for line in lines if line["name"] == STEP and line["device"] == device
               and line["memory_scale"] == 1]
    assert matches, f"{RECORDED} has no {STEP} line for {device}: run tools/xla/plan_platforms.py queue for it."
    return matches[-1]


@pytest.fixture(scope="module")
def tiny_step(tmp_path_factory):
    if not os.path.exists(TPU_PYTHON):
        pytest.fail(f"{TPU_PYTHON} is missing: run `make tpu-venv` (jax 0.11.2 and libtpu on Python 3.12).")
    out = str(tmp_path_factory.mktemp("tpu_step") / STEP)
    done = subprocess.run([sys.executable, TOOL, "export", "--preset=tiny", "--seq=128", "--micro_batch=8",
                           f"--out={out}"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.parametrize("target, device", [("tpu_v4", "TPU v4"), ("tpu_v5e", "TPU v5 lite")])
def test_the_tiny_tpu_step_compiles_for_the_chip_with_the_recorded_buffers(tiny_step, tmp_path, target, device):
    jsonl = tmp_path / "tpu.jsonl"
    done = subprocess.run([TPU_PYTHON, TOOL, "compile", f"--target={target}", tiny_step, f"--jsonl={jsonl}"],
                          capture_output=True, text=True, timeout=900, cwd=REPOSITORY,
                          env=python_path_env(REPOSITORY))  # tools/xla's convention: the checkout on the path
    assert done.returncode == 0, done.stderr[-3000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert json.loads(jsonl.read_text()) == line  # appended as printed, so a second call resumes
    recorded = recorded_line(device)
    assert (line["device"], line["step"], line["batch"], line["micro_batch"]) == (device, "tpu_loop", 256, 8)
    assert line["compiler"] == recorded["compiler"] and line["compiler"].startswith("libtpu ")
    assert line["argument_bytes"] == recorded["argument_bytes"]
    assert line["temporary_bytes"] == pytest.approx(recorded["temporary_bytes"], rel=TEMPORARIES_BAND)
    assert 0 <= line["output_bytes"] - line["alias_bytes"] < 2**20  # the updates reuse the arguments' buffers
    assert line["remat_instructions"] == 0
    assert line["cost_model"]["flops"] > 0
    assert line["source"] == "measured" and " compile --target=" in line["command"]

"""TensorFlow's compiled training step, exported (`tools/xla/export_xla_step.py`) and run by jax 0.11.2 alone
(`tools/xla/run_xla_step.py`, in `.venv-jax`: jax as a machine with a GPU has it, no TensorFlow), on this CPU: one
tiny float32 step agrees with TensorFlow's own run of it, a perturbed weight fails the check, and the runner never
imports TensorFlow.
"""

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, TOOLS_XLA, python_path_env

JAX_PYTHON = os.path.join(REPO, ".venv-jax", "bin", "python")
EXPORT = os.path.join(TOOLS_XLA, "export_xla_step.py")
RUN = os.path.join(TOOLS_XLA, "run_xla_step.py")
# Runs the runner as its `__main__` and then says which modules of TensorFlow or Keras were asked for: a finder
# placed first on the import path records every attempt, imported or not. The child has tools/xla/ (the script's
# folder, as `python tools/xla/run_xla_step.py` has it) and the repository on PYTHONPATH.
WATCHED_RUN = """
import runpy, sys
attempts = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "keras", "tf_keras"):
            attempts.append(name)
        return None
sys.meta_path.insert(0, Watch())
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as exit:
    code = exit.code
print("imports asked for:", sorted(set(attempts)))
sys.exit(code)
"""

pytestmark = pytest.mark.large


@pytest.fixture(scope="module")
def jax_python():
    if not os.path.exists(JAX_PYTHON):
        pytest.fail(f"{JAX_PYTHON} is missing: run `make jax-venv` (jax 0.11.2 on Python 3.12).")
    return JAX_PYTHON


@pytest.fixture(scope="module")
def tiny_step(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("xla_step") / "tiny_f32_8x16")
    done = subprocess.run([sys.executable, EXPORT, "--preset=tiny", "--precision=float32", "--batch=8", "--seq=16",
                           "--preds=4", f"--out={out}"], env=python_path_env(REPO), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def run_step(jax_python, folder, *flags):
    done = subprocess.run([jax_python, "-c", WATCHED_RUN, RUN, folder, "--runs=2", *flags], capture_output=True,
                          text=True, timeout=600, cwd=REPO, env=python_path_env(TOOLS_XLA, REPO))
    lines = done.stdout.strip().splitlines()
    return done.returncode, lines, done.stderr


def test_tiny_step_agrees_with_tensorflow_and_never_imports_it(jax_python, tiny_step):
    with open(os.path.join(tiny_step, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    assert manifest["checked"] and manifest["learning_rate"] > 0  # the counter is inside the warmup
    assert 0.1 < sum(os.path.getsize(os.path.join(tiny_step, n)) for n in os.listdir(tiny_step)) / 2**20 < 3

    code, lines, stderr = run_step(jax_python, tiny_step)
    assert code == 0, "\n".join(lines) + stderr[-3000:]
    assert lines[-1] == "imports asked for: []"
    assert lines[-2] == "agreement: ok"
    worst = next(line for line in lines if line.startswith("check: "))
    assert float(worst.split(", ")[1].split()[0]) < 1e-5, worst
    assert any(line.startswith("XLA buffers: arguments") and "donated" in line for line in lines), lines


def test_perturbed_weight_fails_the_check(jax_python, tiny_step):
    code, lines, stderr = run_step(jax_python, tiny_step, "--perturb")
    assert code == 1, "\n".join(lines) + stderr[-3000:]
    assert lines[-2].startswith("agreement: FAILED (bert/embeddings/word_embeddings differs"), lines

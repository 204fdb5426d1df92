"""The standard set of exported training steps of BERT-base and BERT-large, made with TensorFlow on any machine and
run on a machine with a GPU and jax (docs/accelerators.md, "TensorFlow's step under XLA:GPU"): `export` writes the
set to `xla_steps/`; with the repository and `xla_steps/` on the machine with a GPU and jax, `run` runs it there
(jax, jaxlib and numpy only, never TensorFlow).

The set, most important first: one small checked step (BERT-base, mixed_bfloat16, 2 x 128, with TensorFlow's
results), then BERT-large and BERT-base at 128 and 512 tokens in mixed_bfloat16 at the paper's global batch of 256
with `--platform=h100_80gb`'s micro-batches (configs/platforms.yaml), then a fallback at half the micro-batch for
each, run only when its step ran out of memory. Paper-batch steps are exported without running them with
TensorFlow (256 sequences of BERT-large need more memory than a CPU machine usually has).

    PYTHONPATH=. .venv/bin/python tools/xla/xla_step_set.py export      # writes xla_steps/
    PYTHONPATH=. python3 tools/xla/xla_step_set.py run --platform=gpu   # with a GPU and jax; resumes

`run` runs each step in its own process and writes its figures to `--results` (one JSON file per step, and a line
of `results.jsonl`) as soon as it finishes. With `--deadline_s` it stops starting steps after that many seconds,
cutting a running step short; the next call skips every step that has figures and runs the rest.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

from bench import harness

TOOLS_XLA = os.path.dirname(os.path.abspath(__file__))
GLOBAL_BATCH = 256
PREDICTIONS = {128: 20, 512: 80}  # the paper recipes' max_predictions_per_seq per phase length
# h100_80gb's micro-batches in configs/platforms.yaml (tests/test_platforms.py checks that they agree).
H100_MICRO_BATCH = {("large", 128): 256, ("large", 512): 64, ("base", 128): 256, ("base", 512): 256}
ORDER = (("large", 128), ("large", 512), ("base", 128), ("base", 512))


def standard_set():
    """[{name, export flags, fallback_for}] in the order they run."""
    steps = [{"name": "check_base_bf16_2x128", "preset": "base", "precision": "mixed_bfloat16", "batch": 2,
              "seq": 128, "preds": 20, "micro_batch": 2, "check": True, "fallback_for": None}]
    for half in (False, True):
        for preset, seq in ORDER:
            micro = H100_MICRO_BATCH[(preset, seq)]
            primary = f"{preset}_{seq}_mb{micro}"
            micro = micro // 2 if half else micro
            steps.append({"name": f"{preset}_{seq}_mb{micro}", "preset": preset, "precision": "mixed_bfloat16",
                          "batch": GLOBAL_BATCH, "seq": seq, "preds": PREDICTIONS[seq], "micro_batch": micro,
                          "check": False, "fallback_for": primary if half else None})
    return steps


def export(args):
    """Exports every step of the set not exported yet, each in its own process (memory is returned between them)."""
    os.makedirs(args.steps, exist_ok=True)
    for step in standard_set():
        out = os.path.join(args.steps, step["name"])
        if os.path.exists(os.path.join(out, "manifest.json")):
            print(f"{step['name']}: exported already")
            continue
        command = [sys.executable, os.path.join(TOOLS_XLA, "export_xla_step.py"), f"--out={out}"] + [
            f"--{flag}={step[flag]}" for flag in ("preset", "precision", "batch", "seq", "preds", "micro_batch")]
        subprocess.run(command + ([] if step["check"] else ["--no_check"]), check=True)
    total = sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(args.steps) for name in names)
    print(f"the set: {total / 2**20:.1f} MiB in {args.steps}: run it with `xla_step_set.py run` where jax has a GPU")
    return 0


def run(args):
    """Runs the steps that have no figures yet, until the deadline."""
    started = time.monotonic()
    os.makedirs(args.results, exist_ok=True)
    outcomes = {}
    for step in standard_set():
        name = step["name"]
        figures_file = os.path.join(args.results, f"{name}.json")
        if os.path.exists(figures_file):
            with open(figures_file, encoding="utf-8") as f:
                outcomes[name] = json.load(f)["agreement"]
            continue
        if step["fallback_for"] and "out of memory" not in outcomes.get(step["fallback_for"], ""):
            continue  # its step fitted (or has not run yet): the half micro-batch is not needed
        left = math.inf if args.deadline_s is None else args.deadline_s - (time.monotonic() - started)
        if left < args.min_start_s:
            print(f"deadline: {left:.0f} s left, too little to start {name}; call again to resume", flush=True)
            return 2
        print(f"--- {name}", flush=True)
        command = [sys.executable, os.path.join(TOOLS_XLA, "run_xla_step.py"), os.path.join(args.steps, name),
                   f"--platform={args.platform}", f"--runs={args.runs}", f"--json={figures_file}.partial"]
        try:
            subprocess.run(command, timeout=None if left == math.inf else left)
        except subprocess.TimeoutExpired:
            print(f"deadline: {name} was stopped after {left:.0f} s; call again to resume", flush=True)
            return 2
        if not os.path.exists(f"{figures_file}.partial"):
            print(f"{name}: no figures (the runner failed; its output is above)", flush=True)
            continue
        os.replace(f"{figures_file}.partial", figures_file)
        with open(figures_file, encoding="utf-8") as f:
            figures = json.load(f)
        outcomes[name] = figures["agreement"]
        harness.append_row(args.results, figures)  # with the command and `source: measured`
    print(f"the set is done in {time.monotonic() - started:.0f} s: figures in {args.results}", flush=True)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("export", "run"))
    parser.add_argument("--steps", default="xla_steps", help="The set's folder (one folder per step).")
    parser.add_argument("--results", default="xla_step_results", help="run: where each step's figures go.")
    parser.add_argument("--platform", default="gpu", choices=("cpu", "gpu"), help="run: the platform.")
    parser.add_argument("--runs", type=int, default=10, help="run: steps in each timed loop.")
    parser.add_argument("--deadline_s", type=float, default=None,
                        help="run: stop starting steps after this many seconds (default: run them all).")
    parser.add_argument("--min_start_s", type=float, default=20.0,
                        help="run: do not start a step with less time than this left.")
    args = parser.parse_args(argv)
    return export(args) if args.mode == "export" else run(args)


if __name__ == "__main__":
    sys.exit(main())

"""One prepared GPU session for the step's speed (docs/gpu_attention.md, "Measuring it on a GPU"): where the step's
time goes, Hugging Face's BERT beside it, cuDNN flash attention against today's attention, most important first.

    PYTHONPATH=. .venv/bin/python tools/xla/gpu_session.py --prepare --steps=xla_steps/gpu_session  # TensorFlow
    PYTHONPATH=. python3 tools/xla/gpu_session.py --steps=xla_steps/gpu_session --out=bench/results  # GPU and jax

`--prepare` exports every step the session runs (tools/xla/export_xla_step.py, programs and batches only: weights
are regenerated from seeds where the steps run), each in its own process, skipping those already exported, and
prints the folder's size. The session itself runs on a machine with a GPU and jax: python3 with jax 0.11.2 (CUDA),
torch and transformers, never TensorFlow. Its stages, in order:
1. the card and today's step: the bf16 matmul rate; for BERT-large and BERT-base at 128 and 512 tokens (global
   batch 256, `h100_80gb`'s micro-batches), the step profiled (tools/xla/profile_xla_step.py) and Hugging Face's
   `BertForPreTraining` at the same shape (bench/bench_hf_bert.py, the peer benchmark);
2. the levers on a 4-layer slice of BERT-large (same width and heads): cuDNN flash attention against today's
   attention without attention dropout, run from the same weights (tools/xla/agree_xla_steps.py: agreement and speed of
   both), today's attention with dropout as the default is, and XLA's cuDNN LayerNorm flag;
3. the full models with flash attention where the slice agreed at that length, and Hugging Face under
   `torch.compile`.

Each task runs in its own process and writes its result lines under `--out`/<script>/ as soon as it has them.
`--out`/gpu_session/ledger.jsonl records every finished task, so a second call resumes with the tasks left; with
`--deadline_s` the session starts no task that does not fit the time left (it waits for the next call).
`--scale=tiny` is the same session on the tiny model on a CPU (a dry run: the flash tasks fail there, as XLA:CPU
has no cuDNN).
"""

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
from xla_step_format import INPUTS_FILE, MANIFEST_FILE
from xla_step_set import GLOBAL_BATCH, H100_MICRO_BATCH, PREDICTIONS

from bench import harness

TOOLS_XLA = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(TOOLS_XLA))
HF_BENCHMARK = "bench.bench_hf_bert"  # run as a module from the repository (bench/README.md)
NO_ATTENTION_DROPOUT = ("model.attention_probs_dropout_prob=0.0",)
FLASH = ("model.attention=cudnn_flash",) + NO_ATTENTION_DROPOUT
CUDNN_LAYER_NORM = "--xla_gpu_enable_cudnn_layer_norm=true"


@dataclasses.dataclass(frozen=True)
class Scale:
    """The shapes of a session: `shapes` [(preset, seq, predictions, batch, micro_batch)] of the full models, the
    slice (`slice_preset` cut to `slice_layers` layers) at each of their lengths, and where each side runs."""

    shapes: tuple
    slice_preset: str
    slice_layers: int
    platform: str  # the exported steps' (jax)
    torch_device: str
    steps: tuple  # (warmup, timed): the same for our step and Hugging Face's
    matmul_size: int
    profiled_runs: int


SCALES = {
    "paper": Scale(
        shapes=tuple((preset, seq, PREDICTIONS[seq], GLOBAL_BATCH, H100_MICRO_BATCH[(preset, seq)])
                     for preset, seq in (("large", 128), ("large", 512), ("base", 128), ("base", 512))),
        slice_preset="large", slice_layers=4, platform="gpu", torch_device="cuda", steps=(3, 10),
        matmul_size=8192, profiled_runs=3),
    "tiny": Scale(shapes=(("tiny", 16, 4, 8, 4),), slice_preset="tiny", slice_layers=1, platform="cpu",
                  torch_device="cpu", steps=(1, 1), matmul_size=256, profiled_runs=1),
}


def exports(scale):
    """{step name: (preset, seq, predictions, batch, micro_batch, recipe settings)} the session runs."""
    steps = {}
    for preset, seq, preds, batch, micro in scale.shapes:
        steps[f"{preset}_{seq}_einsum"] = (preset, seq, preds, batch, micro, ())
        steps[f"{preset}_{seq}_cudnn_flash"] = (preset, seq, preds, batch, micro, FLASH)
    slice_depth = (f"model.num_hidden_layers={scale.slice_layers}",)
    for preset, seq, preds, batch, micro in scale.shapes:
        if preset != scale.slice_preset:
            continue
        name = f"slice{scale.slice_layers}_{seq}"
        steps[f"{name}_einsum"] = (preset, seq, preds, batch, micro, slice_depth)
        steps[f"{name}_einsum_nodrop"] = (preset, seq, preds, batch, micro, slice_depth + NO_ATTENTION_DROPOUT)
        steps[f"{name}_cudnn_flash"] = (preset, seq, preds, batch, micro, slice_depth + FLASH)
    return steps


def padded_batch(batch, seed=0):
    """The exported batch ({feature name: array}) with padding at the end of rows, as BERT's records have it: row i
    keeps T - (i % 4) T / 8 tokens (a quarter of the rows each at 100%, 88%, 75% and 62%), its masked positions
    drawn again inside that length, so the attention's lengths matter and the losses read real tokens only.

    >>> batch = {"input_mask": np.ones((4, 16), np.int32), "input_word_ids": np.ones((4, 16), np.int32),
    ...          "input_type_ids": np.ones((4, 16), np.int32), "masked_lm_positions": np.ones((4, 2), np.int32)}
    >>> padded_batch(batch)["input_mask"].sum(axis=1).tolist()
    [16, 14, 12, 10]
    """
    rng = np.random.default_rng(seed)
    batch = {name: value.copy() for name, value in batch.items()}
    rows, seq = batch["input_mask"].shape
    preds = batch["masked_lm_positions"].shape[1]
    for row in range(rows):
        length = seq - (row % 4) * (seq // 8)
        for name in ("input_mask", "input_word_ids", "input_type_ids"):
            batch[name][row, length:] = 0
        batch["masked_lm_positions"][row] = np.sort(rng.choice(np.arange(1, length - 1), preds, replace=False))
    return batch


def pad_exported_batch(folder):
    """Rewrites an exported step's stored batch with `padded_batch` (once: the manifest records it)."""
    with open(os.path.join(folder, MANIFEST_FILE), encoding="utf-8") as f:
        manifest = json.load(f)
    if manifest.get("padded"):
        return
    with np.load(os.path.join(folder, INPUTS_FILE)) as stored:
        stored = dict(stored)
    index = {p["name"][len("batch/"):]: str(p["index"]) for p in manifest["parameters"]
             if p["name"].startswith("batch/")}
    padded = padded_batch({name: stored[key] for name, key in index.items()})
    stored.update({key: padded[name] for name, key in index.items()})
    np.savez_compressed(os.path.join(folder, INPUTS_FILE), **stored)
    manifest["padded"] = "rows keep 100%, 88%, 75% and 62% of their tokens in turn (gpu_session.padded_batch)"
    with open(os.path.join(folder, MANIFEST_FILE), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)


def prepare(steps_dir, scale):
    """Exports the steps not exported yet, the slice's with padded rows (the flash attention's lengths are checked
    against today's masks there); returns the folder's size in bytes."""
    os.makedirs(steps_dir, exist_ok=True)
    for name, (preset, seq, preds, batch, micro, settings) in exports(scale).items():
        out = os.path.join(steps_dir, name)
        if os.path.exists(os.path.join(out, "manifest.json")):
            print(f"{name}: exported already", flush=True)
            continue
        command = [sys.executable, os.path.join(TOOLS_XLA, "export_xla_step.py"), f"--out={out}", f"--preset={preset}",
                   "--precision=mixed_bfloat16", f"--batch={batch}", f"--seq={seq}", f"--preds={preds}",
                   f"--micro_batch={micro}", "--no_check"] + [f"--set={setting}" for setting in settings]
        subprocess.run(command, check=True)
    for name in exports(scale):
        if name.startswith("slice"):
            pad_exported_batch(os.path.join(steps_dir, name))
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(steps_dir) for name in names)


@dataclasses.dataclass(frozen=True)
class Task:
    """One measurement: a script run in its own process (a neighbour by the jax Python, or Hugging Face's benchmark
    by the torch Python: `uses_torch`), its stage, the time it may take (`timeout_s`) and the time it needs to be
    worth starting (`min_s`), `needs`: a task that must have ended with `agreement: ok` first, `env`: variables set
    for it."""

    name: str
    stage: int
    argv: tuple  # the script (a file in tools/xla/, or HF_BENCHMARK) and its flags
    timeout_s: float
    min_s: float
    needs: str = None
    env: tuple = ()

    @property
    def uses_torch(self):
        return self.argv[0] == HF_BENCHMARK


def tasks(scale, steps_dir, out, run_id):
    """The session's tasks, most important first."""
    def step(name):
        return os.path.join(steps_dir, name)

    def profile(name, variant=None):
        warmup, timed = scale.steps
        return ("profile_xla_step.py", step(name), f"--platform={scale.platform}", f"--runs={scale.profiled_runs}",
                f"--warmup_runs={warmup}", f"--timed_runs={timed}",
                f"--results={os.path.join(out, 'profile_xla_step')}", f"--run_id={run_id}") + (
                    (f"--variant={variant}",) if variant else ())

    def hf(preset, seq, preds, batch, micro, compiled=False):
        warmup, timed = scale.steps
        return (HF_BENCHMARK, f"--preset={preset}", f"--seq={seq}", f"--preds={preds}", f"--batch={batch}",
                f"--micro_batch={micro}", f"--device={scale.torch_device}", f"--warmup={warmup}",
                f"--steps={timed}", f"--results={os.path.join(out, 'bench_hf_bert')}",
                f"--run_id={run_id}") + (("--compile",) if compiled else ())

    big = scale.platform == "gpu"
    plan = [Task("matmul_bf16", 1, (HF_BENCHMARK, "--matmul", f"--device={scale.torch_device}",
                                    f"--matmul_size={scale.matmul_size}",
                                    f"--results={os.path.join(out, 'bench_hf_bert')}", f"--run_id={run_id}"), 60, 20)]
    for preset, seq, preds, batch, micro in scale.shapes:
        large = big and preset == "large"
        plan.append(Task(f"profile_{preset}_{seq}_einsum", 1, profile(f"{preset}_{seq}_einsum"),
                         300 if large else 200, 150 if large else 80))
        plan.append(Task(f"hf_{preset}_{seq}", 1, hf(preset, seq, preds, batch, micro), 240, 60 if big else 10))
    for preset, seq, preds, batch, micro in scale.shapes:
        if preset != scale.slice_preset:
            continue
        name = f"slice{scale.slice_layers}_{seq}"
        plan.append(Task(f"agree_{name}", 2, ("agree_xla_steps.py", step(f"{name}_einsum_nodrop"),
                                              step(f"{name}_cudnn_flash"), f"--platform={scale.platform}",
                                              f"--warmup_runs={scale.steps[0]}", f"--runs={scale.steps[1]}",
                                              f"--results={out}", f"--run_id={run_id}"), 240, 60 if big else 10))
        plan.append(Task(f"profile_{name}_einsum", 2, profile(f"{name}_einsum"), 200, 60 if big else 10))
        plan.append(Task(f"profile_{name}_cudnn_flash", 2, profile(f"{name}_cudnn_flash"), 200, 60 if big else 10,
                         needs=f"agree_{name}"))
        plan.append(Task(f"profile_{name}_einsum_cudnn_layer_norm", 2,
                         profile(f"{name}_einsum", f"slice{scale.slice_layers}_einsum_cudnn_layer_norm"), 200,
                         60 if big else 10, env=(("XLA_FLAGS", CUDNN_LAYER_NORM),)))
    for preset, seq, preds, batch, micro in scale.shapes:
        large = big and preset == "large"
        slice_agreement = f"agree_slice{scale.slice_layers}_{seq}"
        plan.append(Task(f"profile_{preset}_{seq}_cudnn_flash", 3, profile(f"{preset}_{seq}_cudnn_flash"),
                         300 if large else 200, 150 if large else 80, needs=slice_agreement))
    for preset, seq, preds, batch, micro in scale.shapes:
        plan.append(Task(f"hf_{preset}_{seq}_compiled", 3, hf(preset, seq, preds, batch, micro, compiled=True), 300,
                         120 if big else 10))
    return plan


def read_ledger(path):
    """{task name: its ledger entry} of the tasks finished by earlier calls."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return {entry["task"]: entry for entry in map(json.loads, filter(str.strip, f))}


def agreement_of(log_file):
    """The `agreement: ...` line's verdict in a task's log ("ok", "FAILED ..."), or None."""
    if not os.path.exists(log_file):
        return None
    with open(log_file, encoding="utf-8", errors="replace") as f:
        lines = [line.strip() for line in f if line.startswith("agreement: ")]
    return lines[-1][len("agreement: "):] if lines else None


def run_session(scale, steps_dir, out, deadline_s, stages, run_id=None, jax_python=None, torch_python=None):
    """Runs the tasks not finished yet, until `deadline_s` (None: no deadline), the jax tasks with `jax_python` and
    the torch ones with `torch_python` (both this Python by default); returns 0 when every task has run, 2 when some
    wait for another call."""
    started = time.monotonic()
    run_id = run_id or harness.new_run_id()
    session_dir = os.path.join(out, "gpu_session")
    os.makedirs(os.path.join(session_dir, "logs"), exist_ok=True)
    ledger_file = os.path.join(session_dir, "ledger.jsonl")
    ledger = read_ledger(ledger_file)
    waiting = []
    for task in tasks(scale, steps_dir, out, run_id):
        if task.stage not in stages or task.name in ledger:
            continue
        if task.needs and ledger.get(task.needs, {}).get("agreement") != "ok":
            if task.needs in ledger:  # it ran and did not agree: this task would measure a wrong computation
                continue
            waiting.append(task.name)
            continue
        left = math.inf if deadline_s is None else deadline_s - (time.monotonic() - started)
        if left < task.min_s:
            waiting.append(task.name)
            continue
        log_file = os.path.join(session_dir, "logs", f"{task.name}.log")
        print(f"--- {task.name} (stage {task.stage}, {left:.0f} s left)", flush=True)
        task_started = time.monotonic()
        with open(log_file, "w", encoding="utf-8") as log:
            try:
                python = (torch_python if task.uses_torch else jax_python) or sys.executable
                script = ["-m", task.argv[0]] if task.uses_torch else [os.path.join(TOOLS_XLA, task.argv[0])]
                # The repository on the path, as for this script (tools/xla/README.md), wherever it was started.
                path = os.pathsep.join([REPOSITORY] + [p for p in [os.environ.get("PYTHONPATH")] if p])
                done = subprocess.run([python, *script, *task.argv[1:]], stdout=log, stderr=subprocess.STDOUT,
                                      timeout=min(task.timeout_s, left),
                                      env={**os.environ, "PYTHONPATH": path, **dict(task.env)})
                status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"
            except subprocess.TimeoutExpired:
                if left < task.timeout_s:  # cut by the session's deadline, not by its own limit: run it again
                    print(f"{task.name}: stopped at the session's deadline; the next call runs it again", flush=True)
                    waiting.append(task.name)
                    continue
                status = f"failed (over its {task.timeout_s:.0f} s)"
        entry = {"task": task.name, "stage": task.stage, "status": status, "run_id": run_id,
                 "seconds": round(time.monotonic() - task_started, 1), "agreement": agreement_of(log_file),
                 "env": dict(task.env)}
        harness.append_row(session_dir, entry, file_name="ledger.jsonl")
        ledger[task.name] = entry
        with open(log_file, encoding="utf-8", errors="replace") as f:
            tail = f.read().strip().splitlines()[-3:]
        print(f"{task.name}: {status} in {entry['seconds']} s" + "".join(f"\n    {line}" for line in tail),
              flush=True)
    if waiting:
        print(f"waiting for another call: {', '.join(waiting)}", flush=True)
        return 2
    print(f"the session is done ({time.monotonic() - started:.0f} s): results under {out}", flush=True)
    return 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepare", action="store_true", help="Export the session's steps (needs TensorFlow).")
    parser.add_argument("--steps", default=os.path.join("xla_steps", "gpu_session"),
                        help="The exported steps' folder.")
    parser.add_argument("--out", default=harness.RESULTS,
                        help="Where result lines go (OUT/<script>/results.jsonl) and the session's ledger and logs.")
    parser.add_argument("--scale", default="paper", choices=sorted(SCALES),
                        help="paper: the GPU session; tiny: the same tasks on the tiny model on a CPU (a dry run).")
    parser.add_argument("--deadline_s", type=float, default=None,
                        help="Start no task that does not fit this many seconds (default: no deadline).")
    parser.add_argument("--stages", default="1,2,3", help="Which stages to run, e.g. 1 or 2,3.")
    parser.add_argument("--jax_python", default=None, help="The Python of the jax tasks (default: this one).")
    parser.add_argument("--torch_python", default=None, help="The Python of the torch tasks (default: this one).")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    scale = SCALES[args.scale]
    if args.prepare:
        size = prepare(args.steps, scale)
        print(f"the session's steps: {size / 2**20:.1f} MiB in {args.steps}", flush=True)
        return 0
    missing = [name for name in exports(scale) if not os.path.exists(os.path.join(args.steps, name, "manifest.json"))]
    if missing:
        print(f"{args.steps} lacks {', '.join(missing)}: run `PYTHONPATH=. python tools/xla/gpu_session.py --prepare "
              f"--steps={args.steps}` with TensorFlow first.", file=sys.stderr)
        return 2
    stages = {int(stage) for stage in args.stages.split(",")}
    return run_session(scale, args.steps, args.out, args.deadline_s, stages,
                       jax_python=args.jax_python, torch_python=args.torch_python)


if __name__ == "__main__":
    sys.exit(main())

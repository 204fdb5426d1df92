"""Exports and compiles a queue of TPU steps, one at a time, for configs/platforms.yaml's `xla_tpu_estimates`
(docs/accelerators.md, "XLA:TPU's buffers without a TPU").

Each line of the queue file is `target preset seq micro_batch [layers] [memory_scale]`, e.g.
`tpu_v5e large 512 16` (the whole model) or `tpu_v5e large 512 8 1` (one Transformer block, a shallow step the
memory is extrapolated from); `#` starts a comment. For each line the step is exported with TensorFlow
(bench/export_tpu_step.py, `--python`; skipped when its folder exists) and compiled for one chip with libtpu
(bench/estimate_xla_memory.py, `--tpu_python`), whose JSON line is appended to `--jsonl`; a step that already has a
line there for that chip and memory scale is skipped, so a second call resumes. The queue file is read again
before each step, so lines can be added while it runs.

    nice -n 19 .venv/bin/python bench/tpu_memory_set.py queue.txt \\
        --jsonl=bench/results/estimate_xla_memory/tpu.jsonl
"""

import argparse
import os
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)


def step_name(preset, seq, micro_batch, layers=None):
    """The step folder's name: `large_512_mb16`, or `large_512_mb16_l1` for a model cut to one block."""
    return f"{preset}_{seq}_mb{micro_batch}" + (f"_l{layers}" if layers else "")


def read_queue(path):
    """[(target, preset, seq, micro_batch, layers or None, memory_scale)] from the queue file."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.split("#")[0].split()
            if not fields:
                continue
            if not 4 <= len(fields) <= 6:
                raise ValueError(f"{path}:{number}: {line.strip()!r} is not 'target preset seq micro_batch "
                                 f"[layers] [memory_scale]'")
            target, preset, seq, micro = fields[0], fields[1], int(fields[2]), int(fields[3])
            layers = int(fields[4]) if len(fields) > 4 and fields[4] != "-" else None
            scale = float(fields[5]) if len(fields) > 5 else 1
            entries.append((target, preset, seq, micro, layers, int(scale) if scale == int(scale) else scale))
    return entries


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("queue", help="The queue file (read again before each step).")
    parser.add_argument("--jsonl", required=True, help="The results file the compiles append to.")
    parser.add_argument("--steps_dir", default=os.path.join(REPO, "xla_steps", "tpu"))
    parser.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    parser.add_argument("--tpu_python", default=os.path.join(REPO, ".venv-tpu", "bin", "python"))
    args = parser.parse_args(argv)
    sys.path.insert(0, BENCH)
    from estimate_xla_memory import TPU_TARGETS, done_keys

    attempted = set()
    while True:
        done = done_keys(args.jsonl)
        pending = [e for e in read_queue(args.queue) if e not in attempted and
                   (step_name(*e[1:5]), TPU_TARGETS[e[0]][2], e[5]) not in done]
        if not pending:
            return 0
        entry = pending[0]
        attempted.add(entry)
        target, preset, seq, micro, layers, scale = entry
        folder = os.path.join(args.steps_dir, step_name(preset, seq, micro, layers))
        if not os.path.exists(os.path.join(folder, "manifest.json")):
            command = [args.python, os.path.join(BENCH, "export_tpu_step.py"), f"--preset={preset}", f"--seq={seq}",
                       f"--micro_batch={micro}", f"--out={folder}"] + ([f"--layers={layers}"] if layers else [])
            if subprocess.run(command, stderr=subprocess.DEVNULL).returncode:
                print(f"# export failed: {' '.join(command)}", flush=True)
                continue
        command = [args.tpu_python, os.path.join(BENCH, "estimate_xla_memory.py"), f"--target={target}", folder,
                   f"--jsonl={args.jsonl}", f"--memory_scale={scale}"]
        result = subprocess.run(command, stderr=subprocess.PIPE, text=True)
        if result.returncode:
            print(f"# compile failed ({target} {folder}): {result.stderr.strip().splitlines()[-1:]}", flush=True)


if __name__ == "__main__":
    sys.exit(main())

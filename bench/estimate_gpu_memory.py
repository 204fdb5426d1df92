"""XLA:GPU's own buffer sizes for an exported training step, compiled ahead of time for an H100 with no GPU present.

jaxlib's CUDA plugin compiles for a target description instead of a device (docs/accelerators.md, "XLA:GPU's
buffers without a GPU"): `jax.experimental.topologies.get_topology_desc("", "cuda", target_config=...)` gives a
compile-only client whose executables report XLA:GPU's buffer assignment (arguments, temporaries, outputs) as the
card would allocate it. Run it with a Python that has jax[cuda13]==0.11.2 (`make jax-cuda-venv`) on a machine without
a GPU:

    JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 .venv-jax-cuda/bin/python bench/estimate_gpu_memory.py \
        xla_steps/large_128_mb256 xla_steps/base_128_mb256 --jsonl=xla_gpu_estimates.jsonl

Each step (a folder written by bench/export_xla_step.py; a folder that holds step folders stands for all of them)
prints one JSON line as soon as it has compiled, and appends it to `--jsonl`. A step whose name already has a line in
`--jsonl` is skipped, so a second call resumes. A paper-batch step compiles for the H100 in 1 to 4 minutes on 2 cores.

The target description (bench/h100_sxm_target.txtpb) is a trimmed copy of XLA's own
`xla/backends/gpu/target_config/h100_sxm.txtpb` (the `GpuTargetConfigProto` of an H100 80GB HBM3, SXM). The step is
compiled as bench/stablehlo_program.py converts it (the one `mhlo.copy` replaced, as for the loaded GPU client).

XLA:GPU rematerializes (recomputes activations instead of keeping them) when a step would not fit a limit derived
from the target's memory, so a step compiled for the card can fit only by recomputing. `--memory_scale=2` compiles
for a card twice as large: its peak is what the step holds without that recomputation (the figure a micro-batch
should fit with; configs/platforms.yaml's `xla_gpu_estimates` record both). The share of the card in each line is
always of the real card's memory.

The helpers above `compile_step` are pure Python (no jax): tests/test_estimate_gpu_memory.py covers them.
"""

import argparse
import gzip
import json
import math
import os
import re
import sys
import time

from stablehlo_program import stablehlo_bytecode

BENCH = os.path.dirname(os.path.abspath(__file__))
TARGET_FILE = os.path.join(BENCH, "h100_sxm_target.txtpb")
GIB = 2**30


def device_memory_bytes(target_text):
    """The card's memory in bytes, as the target description's `device_memory_size` says."""
    match = re.search(r"device_memory_size:\s*(\d+)", target_text)
    if not match:
        raise ValueError("the target description has no device_memory_size")
    return int(match.group(1))


def scaled_target(target_text, scale):
    """The target description with its device_memory_size times `scale`: XLA:GPU rematerializes (recomputes
    activations instead of keeping them) to fit a limit derived from the card's memory, so a step compiled for a card
    `scale` times larger shows what it holds without that recomputation."""
    if scale == 1:
        return target_text
    memory = device_memory_bytes(target_text)
    return re.sub(r"device_memory_size:\s*\d+", f"device_memory_size: {int(memory * scale)}", target_text, count=1)


def step_folders(paths):
    """The step folders named by `paths`, in order: a folder with a manifest.json is a step; a folder without one
    stands for its sub-folders that have one (sorted)."""
    folders = []
    for path in paths:
        if os.path.exists(os.path.join(path, "manifest.json")):
            folders.append(path)
            continue
        inner = sorted(os.path.join(path, name) for name in os.listdir(path)
                       if os.path.exists(os.path.join(path, name, "manifest.json")))
        if not inner:
            raise ValueError(f"{path}: neither a step folder nor a folder of steps (no manifest.json)")
        folders.extend(inner)
    return folders


def peak_bytes(figures):
    """What the step holds at its peak: its arguments, its temporaries and the outputs that do not reuse (alias) a
    donated argument's buffer."""
    return figures["argument_bytes"] + figures["temporary_bytes"] + figures["output_bytes"] - figures["alias_bytes"]


def figures_line(name, manifest, stats, device_bytes, compile_s, device_kind, jaxlib_version, memory_scale=1):
    """The JSON record of one compiled step; `stats` maps argument/temp/output/alias bytes; `device_bytes` is the real
    card's memory (`memory_scale` says how much larger the target it was compiled for was)."""
    figures = {"name": name, "preset": manifest["preset"], "precision": manifest["precision"],
               "batch": manifest["batch"], "seq": manifest["seq"], "micro_batch": manifest["micro_batch"],
               "device": device_kind, "jaxlib": jaxlib_version, "memory_scale": memory_scale,
               "compile_s": round(compile_s, 1),
               "argument_bytes": int(stats["argument_bytes"]), "temporary_bytes": int(stats["temporary_bytes"]),
               "output_bytes": int(stats["output_bytes"]), "alias_bytes": int(stats["alias_bytes"])}
    figures["peak_bytes"] = peak_bytes(figures)
    figures["device_bytes"] = device_bytes
    for key in ("argument", "temporary", "output", "peak", "device"):
        figures[f"{key}_gib"] = round(figures[f"{key}_bytes"] / GIB, 2)
    figures["fraction_of_device"] = round(figures["peak_bytes"] / device_bytes, 3)
    return figures


def largest_fitting_micro_batch(points, device_bytes, margin, limit=256):
    """The largest power of two <= `limit` whose peak stays under (1 - margin) of the card, from measured
    (micro_batch, peak_bytes) points. Between and beyond two points the peak is taken as linear in the micro-batch
    (the weights and slots are fixed; activations grow with it), from the two nearest points; with one point, as
    proportional above a fixed part of zero (an over-estimate, so on the safe side). None if even 1 does not fit."""
    points = sorted(set(points))
    budget = (1 - margin) * device_bytes

    def peak_at(micro):
        for m, b in points:
            if m == micro:
                return b
        if len(points) == 1:
            m, b = points[0]
            return b * micro / m
        below = [p for p in points if p[0] < micro]
        above = [p for p in points if p[0] > micro]
        if below and above:
            (m0, b0), (m1, b1) = below[-1], above[0]
        elif above:
            (m0, b0), (m1, b1) = above[0], above[1]
        else:
            (m0, b0), (m1, b1) = below[-2], below[-1]
        return b0 + (b1 - b0) * (micro - m0) / (m1 - m0)

    best = None
    for power in range(int(math.log2(limit)) + 1):
        if peak_at(2**power) <= budget:
            best = 2**power
    return best


def done_names(jsonl):
    if not jsonl or not os.path.exists(jsonl):
        return set()
    with open(jsonl, encoding="utf-8") as f:
        return {json.loads(line)["name"] for line in f if line.strip()}


def compile_step(folder, devices, client):
    """Compiles one exported step for the target; returns (stats dict, seconds)."""
    from jaxlib import xla_client

    with gzip.open(os.path.join(folder, "program.hlo.pb.gz")) as f:
        program = f.read()
    started = time.perf_counter()
    try:
        bytecode = stablehlo_bytecode(program)
    except RuntimeError as error:
        raise RuntimeError(f"{folder}: {error}") from error
    executable = client.compile(bytecode, xla_client.DeviceList(tuple(devices)), xla_client.CompileOptions())
    seconds = time.perf_counter() - started
    stats = executable.get_compiled_memory_stats()
    return ({"argument_bytes": stats.argument_size_in_bytes, "temporary_bytes": stats.temp_size_in_bytes,
             "output_bytes": stats.output_size_in_bytes, "alias_bytes": stats.alias_size_in_bytes}, seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("steps", nargs="+", help="Step folders (bench/export_xla_step.py), or folders of them.")
    parser.add_argument("--target", default=TARGET_FILE, help="A GpuTargetConfigProto in text form.")
    parser.add_argument("--jsonl", default=None, help="Append each step's line here; skip steps it already has.")
    parser.add_argument("--memory_scale", type=float, default=1,
                        help="Compile for a card with this many times the target's memory (2: the step's buffers "
                             "without the rematerialization XLA:GPU does to fit the real card).")
    args = parser.parse_args(argv)

    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")  # no GPU, so no driver to check against
    import jax
    from jax.experimental import topologies

    jax.config.update("jax_enable_x64", True)  # the int64 step counter and dropout seed states
    with open(args.target, encoding="utf-8") as f:
        target = f.read()
    device_bytes = device_memory_bytes(target)
    topology = topologies.get_topology_desc("", "cuda", target_config=scaled_target(target, args.memory_scale),
                                            topology="1x1x1")
    devices = topology.devices
    client = devices[0].client
    skip = done_names(args.jsonl)
    for folder in step_folders(args.steps):
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        name = manifest["name"]
        if name in skip:
            print(f"# {name}: in {args.jsonl} already", file=sys.stderr, flush=True)
            continue
        stats, seconds = compile_step(folder, devices, client)
        line = json.dumps(figures_line(name, manifest, stats, device_bytes, seconds, devices[0].device_kind,
                                       jax.__version__, args.memory_scale))
        print(line, flush=True)
        if args.jsonl:
            with open(args.jsonl, "a", encoding="utf-8") as f:
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""XLA's own buffer sizes for an exported training step, compiled ahead of time for an accelerator that is not there:
an H100 (XLA:GPU, jaxlib's CUDA plugin) or one chip of a TPU generation (XLA:TPU, libtpu).

Both compilers compile for a description of the device instead of the device (docs/accelerators.md, "XLA:GPU's
buffers without a GPU" and "XLA:TPU's buffers without a TPU"):
`jax.experimental.topologies.get_topology_desc(...)` gives a compile-only client whose executables report the buffer
assignment (arguments, temporaries, outputs) as the device would allocate it.

- GPU: a Python with jax[cuda13]==0.11.2 (`make jax-cuda-venv`); the target is a `GpuTargetConfigProto` file
  (bench/h100_sxm_target.txtpb, a trimmed copy of XLA's own `xla/backends/gpu/target_config/h100_sxm.txtpb`):

    JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 .venv-jax-cuda/bin/python bench/estimate_xla_memory.py \
        xla_steps/large_128_mb256 xla_steps/base_128_mb256 --jsonl=xla_gpu_estimates.jsonl

- TPU: a Python with jax==0.11.2 and libtpu (`make tpu-venv`); the target names the chip (tpu_v4, tpu_v5e, tpu_v5p,
  tpu_v6e, the platforms' device names); the steps are bench/export_tpu_step.py's (the TPU loop's program):

    .venv-tpu/bin/python bench/estimate_xla_memory.py --target=tpu_v5e xla_steps/tpu/large_512_mb32 \
        --jsonl=bench/results/estimate_xla_memory/tpu.jsonl

Each step (a folder written by bench/export_xla_step.py or bench/export_tpu_step.py; a folder that holds step folders
stands for all of them) prints one JSON line as soon as it has compiled, and appends it to `--jsonl`. A step whose
name already has a line for the same device and memory scale in `--jsonl` is skipped, so a second call resumes.

Both compilers rematerialize (recompute activations instead of keeping them) when a step would not fit a limit
derived from the device's memory, so a step compiled for the device can fit only by recomputing. `--memory_scale=2`
compiles for a device twice as large (GPU: the target's device_memory_size; TPU: libtpu's
`--xla_tpu_max_hbm_size_mib`): its peak is what the step holds without that recomputation, the figure a micro-batch
should fit with (configs/platforms.yaml's `xla_gpu_estimates` and `xla_tpu_estimates` record both). Each line also
counts the instructions XLA:TPU named as rematerialized (`remat_instructions`, from the compiled program's text). The
share of the device in each line is always of the real device's memory.

The helpers above `compile_step` are pure Python (no jax): tests/test_estimate_xla_memory.py covers them.
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
# The platforms' TPU devices (bert_tf/accelerators/device_peaks.py): the jax topology whose first chip is compiled
# for, the chip's HBM in GiB, and the device kind jax names. A v4 or v5p chip has two TensorCores that TensorFlow and
# jax drive as one device (megacore, all the chip's HBM); v4's compile-only topology gives one device per core unless
# asked for megacore (`TPU_TOPOLOGY_OPTIONS`).
TPU_TARGETS = {"tpu_v4": ("v4:2x2x1", 32, "TPU v4"), "tpu_v5e": ("v5e:2x2", 16, "TPU v5 lite"),
               "tpu_v5p": ("v5p:2x2x1", 95, "TPU v5"), "tpu_v6e": ("v6e:2x2", 32, "TPU v6 lite")}
TPU_TOPOLOGY_OPTIONS = {"tpu_v4": {"chip_config_name": "megacore"}}
# A compiled instruction XLA's rematerialization made has a name with this in it (`fusion.12.remat`, `.remat2`).
REMAT_NAME = re.compile(r"%[\w.-]*\.remat\d*\b")


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


def tpu_init_args(device_gib, scale):
    """libtpu's flags (LIBTPU_INIT_ARGS) for a chip with `scale` times its HBM: empty at 1, so the chip's own limit
    applies."""
    if scale == 1:
        return ""
    return f"--xla_tpu_max_hbm_size_mib={int(device_gib * 1024 * scale)}"


def remat_instructions(compiled_text):
    """How many instructions of a compiled program's text XLA's rematerialization added (0: nothing recomputed)."""
    return len(set(REMAT_NAME.findall(compiled_text)))


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


def figures_line(name, manifest, stats, device_bytes, compile_s, device_kind, jaxlib_version, memory_scale=1,
                 compiler=None, extra=None):
    """The JSON record of one compiled step; `stats` maps argument/temp/output/alias bytes; `device_bytes` is the real
    device's memory (`memory_scale` says how much larger the target it was compiled for was); `compiler` names the
    device compiler's own version where it is not jaxlib's (libtpu's); `extra` adds fields (the remat count, the
    cost model's figures). `stats` None: the compiler refused the step for want of memory (`extra["error"]`)."""
    figures = {"name": name, "preset": manifest["preset"], "precision": manifest["precision"],
               "batch": manifest["batch"], "seq": manifest["seq"], "micro_batch": manifest["micro_batch"],
               "layers": manifest.get("num_hidden_layers"), "step": manifest.get("step", "gpu_step"),
               "device": device_kind, "jaxlib": jaxlib_version, "memory_scale": memory_scale,
               "compile_s": round(compile_s, 1), "device_bytes": device_bytes}
    if compiler:
        figures["compiler"] = compiler
    if stats is None:  # the compiler refused the step: it does not fit the device (`extra` says why)
        figures["device_gib"] = round(device_bytes / GIB, 2)
        figures.update(extra or {})
        return figures
    figures.update({key: int(stats[key]) for key in ("argument_bytes", "temporary_bytes", "output_bytes",
                                                     "alias_bytes")})
    figures["peak_bytes"] = peak_bytes(figures)
    for key in ("argument", "temporary", "output", "peak", "device"):
        figures[f"{key}_gib"] = round(figures[f"{key}_bytes"] / GIB, 2)
    figures["fraction_of_device"] = round(figures["peak_bytes"] / device_bytes, 3)
    figures.update(extra or {})
    return figures


def value_at(points, micro):
    """The value at `micro` from (micro_batch, value) points: a point's own value, else the line through the two
    nearest points (between or beyond them; the weights and slots are fixed and activations grow with the
    micro-batch), or with one point, proportional above a fixed part of zero (an over-estimate, the safe side)."""
    points = sorted(set(points))
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


def largest_fitting_micro_batch(points, device_bytes, margin, limit=256):
    """The largest power of two <= `limit` whose peak stays under (1 - margin) of the device, from measured
    (micro_batch, peak_bytes) points, the peak between and beyond them as `value_at` takes it. None if even 1 does
    not fit."""
    budget = (1 - margin) * device_bytes
    best = None
    for power in range(int(math.log2(limit)) + 1):
        if value_at(points, 2**power) <= budget:
            best = 2**power
    return best


def extrapolate_depth(lines, layers):
    """The whole model's buffers from shallow steps: {micro_batch: {argument_bytes, temporary_bytes, peak_bytes}} at
    `layers` blocks, from lines of the same step at two depths (`layers` field) for each micro-batch. Every block
    has the same shapes, so each byte count is taken as linear in the depth (as bert_tf/analysis/memory_estimate.py
    does for XLA:CPU); a micro-batch without two depths is left out.

    Example: 1 GiB of temporaries with one block, 1.5 GiB with two, so 12.5 GiB with 24.
    >>> shallow = [{"micro_batch": 8, "layers": n, "argument_bytes": n * 2**20, "temporary_bytes": (n + 1) * 2**29,
    ...             "peak_bytes": n * 2**20 + (n + 1) * 2**29} for n in (1, 2)]
    >>> extrapolate_depth(shallow, 24)[8]["temporary_bytes"] / GIB
    12.5
    """
    by_micro = {}
    for line in lines:
        if "peak_bytes" in line:
            by_micro.setdefault(line["micro_batch"], {})[line["layers"]] = line
    figures = {}
    for micro, depths in sorted(by_micro.items()):
        if len(depths) < 2:
            continue
        (d0, a), (d1, b) = sorted(depths.items())[:2]
        figures[micro] = {key: a[key] + (b[key] - a[key]) * (layers - d0) / (d1 - d0)
                          for key in ("argument_bytes", "temporary_bytes", "peak_bytes")}
    return figures


def whole_model_figures(lines, layers):
    """{micro_batch: figures} of the whole model (`layers` blocks) from one device's lines: the whole model's own
    compiles where there are any (`extrapolated` False; `no_remat_peak_bytes` from a compile for a larger device
    where the one for the device recomputed), else `extrapolate_depth` of the shallow ones (`extrapolated` True)."""
    figures = {micro: {**values, "extrapolated": True}
               for micro, values in extrapolate_depth([line for line in lines if line.get("layers") != layers
                                                       and line["memory_scale"] == 1], layers).items()}
    whole = [line for line in lines if line.get("layers") == layers and "peak_bytes" in line]
    for line in sorted(whole, key=lambda line: line["memory_scale"] != 1):
        if line["memory_scale"] == 1:
            figures[line["micro_batch"]] = {key: line[key] for key in ("argument_bytes", "temporary_bytes",
                                                                       "peak_bytes", "remat_instructions")}
            figures[line["micro_batch"]]["extrapolated"] = False
        elif line["micro_batch"] in figures and not figures[line["micro_batch"]]["extrapolated"]:
            figures[line["micro_batch"]]["no_remat_peak_bytes"] = line["peak_bytes"]
    return figures


def plan_micro_batch(figures, device_bytes, margin, limit=256):
    """The entry's micro-batch and its figures at it and at twice it (up to `limit`), from `whole_model_figures`:
    the largest power of two whose peak without recomputation stays under (1 - margin) of the device. A figure at
    a micro-batch nobody compiled is the line through the nearest ones (`extrapolated` True).

    Example: 2 GiB fixed and 0.25 GiB a sequence, extrapolated at 8 and 32: 32 fits 12.8 GiB, 64 (18 GiB) does not.
    >>> figures = {m: {"argument_bytes": 2 * GIB, "temporary_bytes": m * GIB / 4, "peak_bytes": (2 + m / 4) * GIB,
    ...                "extrapolated": True} for m in (8, 32)}
    >>> micro, at = plan_micro_batch(figures, 16 * GIB, 0.2)
    >>> micro, sorted(at), at[64]["peak_bytes"] / GIB
    (32, [32, 64], 18.0)
    """
    def no_remat(values):
        return values.get("no_remat_peak_bytes", values["peak_bytes"])

    micro = largest_fitting_micro_batch([(m, no_remat(v)) for m, v in figures.items()], device_bytes, margin,
                                        limit)
    if len(figures) == 1 and (micro or 0) < min(figures):
        # Proportional from zero over-estimates above the one figure and under-estimates below it.
        raise ValueError(f"one figure, at {min(figures)} sequences, does not fit: compile a smaller micro-batch")
    chosen = {}
    for m in (micro, 2 * micro) if micro else ():
        if m > limit:
            continue
        if m in figures:
            chosen[m] = figures[m]
            continue
        near = [(k, v) for k, v in figures.items() if v["extrapolated"]] or list(figures.items())
        peak = value_at([(k, v["peak_bytes"]) for k, v in near], m)
        arguments = value_at([(k, v["argument_bytes"]) for k, v in near], m) if len(near) > 1 else \
            near[0][1]["argument_bytes"]  # the weights and slots do not grow with the micro-batch
        chosen[m] = {"argument_bytes": arguments, "temporary_bytes": peak - arguments, "peak_bytes": peak,
                     "extrapolated": True}
    return micro, chosen


def done_keys(jsonl):
    """The (step name, device, memory scale) of every line in `jsonl` (empty when there is no file)."""
    if not jsonl or not os.path.exists(jsonl):
        return set()
    with open(jsonl, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return {(line["name"], line["device"], line.get("memory_scale", 1)) for line in lines}


def compile_step(folder, devices, client, parsed_module=False):
    """Compiles one exported step for the target; returns (stats dict, seconds, extra fields). `parsed_module`: hand
    the client an `ir.Module` instead of bytecode (the TPU client refuses the raw bytes with a TypeError)."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir
    from jaxlib import xla_client

    with gzip.open(os.path.join(folder, "program.hlo.pb.gz")) as f:
        program = f.read()
    started = time.perf_counter()
    try:
        bytecode = stablehlo_bytecode(program)
    except RuntimeError as error:
        raise RuntimeError(f"{folder}: {error}") from error
    device_list = xla_client.DeviceList(tuple(devices))
    if parsed_module:
        with jax_mlir.make_ir_context():
            executable = client.compile(ir.Module.parse(bytecode), executable_devices=device_list,
                                        compile_options=xla_client.CompileOptions())
    else:
        executable = client.compile(bytecode, device_list, xla_client.CompileOptions())
    seconds = time.perf_counter() - started
    stats = executable.get_compiled_memory_stats()
    extra = {}
    if parsed_module:  # XLA:TPU: whether it recomputed to fit, and its cost model's view of the step
        extra["remat_instructions"] = remat_instructions(executable.hlo_modules()[0].to_string())
        costs = executable.cost_analysis()
        costs = costs[0] if isinstance(costs, (list, tuple)) else costs
        extra["cost_model"] = {key: float(costs[key]) for key in ("flops", "bytes accessed", "transcendentals",
                                                                   "optimal_seconds") if key in costs}
    return ({"argument_bytes": stats.argument_size_in_bytes, "temporary_bytes": stats.temp_size_in_bytes,
             "output_bytes": stats.output_size_in_bytes, "alias_bytes": stats.alias_size_in_bytes}, seconds, extra)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("steps", nargs="+", help="Step folders (bench/export_xla_step.py, bench/export_tpu_step.py), "
                                                 "or folders of them.")
    parser.add_argument("--target", default=TARGET_FILE,
                        help=f"A GpuTargetConfigProto in text form, or a TPU chip: {', '.join(TPU_TARGETS)}.")
    parser.add_argument("--jsonl", default=None, help="Append each step's line here; skip steps it already has.")
    parser.add_argument("--memory_scale", type=float, default=1,
                        help="Compile for a device with this many times the target's memory (2: the step's buffers "
                             "without the rematerialization XLA does to fit the real device).")
    args = parser.parse_args(argv)

    tpu = args.target in TPU_TARGETS
    if tpu:
        topology_name, device_gib, _ = TPU_TARGETS[args.target]
        device_bytes = device_gib * GIB
        flags = tpu_init_args(device_gib, args.memory_scale)
        os.environ["LIBTPU_INIT_ARGS"] = " ".join(filter(None, (os.environ.get("LIBTPU_INIT_ARGS"), flags)))
        # Compile-only chips share no hardware, so a second libtpu process (another compile) need not wait for the
        # first one's lock file.
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    elif not os.path.exists(args.target):
        parser.error(f"--target={args.target}: neither a file nor a TPU chip: give a GpuTargetConfigProto file or "
                     f"one of {', '.join(TPU_TARGETS)}")
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")  # no GPU, so no driver to check against
    import jax
    from jax.experimental import topologies

    jax.config.update("jax_enable_x64", True)  # the int64 step counter and dropout seed states
    compiler = None
    if tpu:
        from importlib import metadata

        devices = topologies.get_topology_desc(topology_name, "tpu",
                                               **TPU_TOPOLOGY_OPTIONS.get(args.target, {})).devices[:1]
        compiler = f"libtpu {metadata.version('libtpu')}"
    else:
        with open(args.target, encoding="utf-8") as f:
            target = f.read()
        device_bytes = device_memory_bytes(target)
        devices = topologies.get_topology_desc("", "cuda", target_config=scaled_target(target, args.memory_scale),
                                               topology="1x1x1").devices
    client = devices[0].client
    skip = done_keys(args.jsonl)
    for folder in step_folders(args.steps):
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        name = manifest["name"]
        if (name, devices[0].device_kind, args.memory_scale) in skip:
            print(f"# {name}: in {args.jsonl} already", file=sys.stderr, flush=True)
            continue
        try:
            stats, seconds, extra = compile_step(folder, devices, client, parsed_module=tpu)
        except Exception as error:  # noqa: BLE001 - only the compiler's out-of-memory verdict is a result
            if "RESOURCE_EXHAUSTED" not in str(error):
                raise
            stats, seconds, extra = None, 0.0, {"error": str(error).strip().splitlines()[0][:400]}
        line = json.dumps(figures_line(name, manifest, stats, device_bytes, seconds, devices[0].device_kind,
                                       jax.__version__, args.memory_scale, compiler, extra))
        print(line, flush=True)
        if args.jsonl:
            os.makedirs(os.path.dirname(os.path.abspath(args.jsonl)), exist_ok=True)
            with open(args.jsonl, "a", encoding="utf-8") as f:
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Runs a training step exported by `tools/xla/export_xla_step.py` under jaxlib's XLA (on a machine with a GPU and
jax, or on a CPU), checks it against TensorFlow's own run and measures it. Needs only jax, jaxlib and numpy: it
never imports TensorFlow. See docs/accelerators.md, "TensorFlow's step under XLA:GPU".

    PYTHONPATH=. python tools/xla/run_xla_step.py /tmp/xla_tiny                       # on the CPU
    PYTHONPATH=. python tools/xla/run_xla_step.py xla_steps/large_128_mb256 --platform=gpu --runs=10
    PYTHONPATH=. python tools/xla/run_xla_step.py /tmp/xla_tiny --perturb             # the negative control: must fail

The program (`HloModuleProto`) is converted to StableHLO by jaxlib's own converter and compiled by the platform's
XLA; weights and Adam slots are regenerated from their pattern, the rest read from the export. One step is run and
every output TensorFlow's run sampled is compared with it; then `--runs` steps are timed, each fed the variables the
step before updated (the program's aliased buffers are donated, as in training). Printed: compile time, XLA's buffer
sizes, the device's peak memory, step time, sequences/s, TFLOP/s and MFU, and a last line `agreement: ok`,
`agreement: not checked (...)` for an export without TensorFlow's results, or `agreement: FAILED ...` (exit 1;
an out-of-memory compile or run is one such line). The figures are the compiled step alone under jaxlib's XLA,
without TensorFlow's loop and input pipeline.
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
from stablehlo_program import stablehlo_bytecode
from xla_step_format import CHECK_FILE, INPUTS_FILE, MANIFEST_FILE, PROGRAM_FILE, parameter_value, sample_indices

from bert_tf.accelerators.device_peaks import device_spec  # pure Python, from the checkout (PYTHONPATH=.)

# The largest difference from TensorFlow's CPU run allowed, as a fraction of the step's largest change of that
# output (its update), by (precision, platform). Measured on this CPU (TF 2.21 XLA:CPU against jaxlib 0.11.2
# XLA:CPU): float32 within 1e-6, mixed_bfloat16 within bfloat16 rounding. A GPU computes float32 matmuls in TF32
# (10-bit mantissa) and fuses bfloat16 arithmetic differently, hence the wider GPU rows (not yet measured).
TOLERANCES = {("float32", "cpu"): 1e-5, ("mixed_bfloat16", "cpu"): 2e-2, ("mixed_float16", "cpu"): 2e-2,
              ("float32", "gpu"): 5e-2, ("mixed_bfloat16", "gpu"): 1e-1, ("mixed_float16", "gpu"): 1e-1}
# The compute dtype's column of `device_peaks.DeviceSpec`: a GPU runs float32 matmuls in TF32 under XLA.
PEAK_COLUMN = {"float32": "tensor_float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}
OOM_MARKERS = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory", "OOM")


class OutOfMemory(Exception):
    """XLA could not allocate the program's buffers (at compile or at run time)."""


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="A folder written by tools/xla/export_xla_step.py.")
    parser.add_argument("--platform", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--runs", type=int, default=5, help="Steps in the timed loop.")
    parser.add_argument("--perturb", action="store_true",
                        help="Change one weight before running, so the check must fail (the negative control).")
    parser.add_argument("--json", default=None, help="Also write the figures as one JSON object to this file.")
    return parser.parse_args(argv)


class ExportedStep:
    """An exported step: its manifest, program, stored inputs and (when checked) TensorFlow's output samples."""

    def __init__(self, folder):
        self.folder = folder
        with open(os.path.join(folder, MANIFEST_FILE), encoding="utf-8") as f:
            self.manifest = json.load(f)
        with gzip.open(os.path.join(folder, PROGRAM_FILE), "rb") as f:
            self.program = f.read()
        with np.load(os.path.join(folder, INPUTS_FILE)) as stored:
            self.stored = dict(stored)
        check = os.path.join(folder, CHECK_FILE)
        self.check = dict(np.load(check)) if os.path.exists(check) else None
        self.parameters = self.manifest["parameters"]
        self.outputs = self.manifest["outputs"]

    def arguments(self, perturb=False):
        """Every entry parameter's value as numpy, in the program's order; with `perturb`, one element of the
        first regenerated weight is moved by 0.5 (an element the check samples)."""
        values = [parameter_value(p, self.stored) for p in self.parameters]
        if perturb:
            target = next(p for p in self.parameters if p["source"] == "pattern")
            flat = values[target["index"]].reshape(-1)
            flat[sample_indices(flat.size)[0]] += np.float32(0.5)
            print(f"perturbed: {target['name']} (parameter {target['index']}), one element by +0.5")
        return values


def compare(step, before, after):
    """[(output's parameter name, error as a fraction of its update, or "mismatch" for integers)] for every
    sampled output, worst first; `before` are the arguments, `after` the program's outputs (numpy)."""
    errors = []
    for output in step.outputs:
        parameter = step.parameters[output["parameter"]]
        expected = step.check[str(output["index"])]
        indices = sample_indices(int(np.prod(parameter["shape"], dtype=np.int64)))
        got = np.asarray(after[output["index"]]).reshape(-1)[indices]
        if not np.issubdtype(expected.dtype, np.floating):
            errors.append((parameter["name"], 0.0 if np.array_equal(got, expected) else float("inf")))
            continue
        was = np.asarray(before[output["parameter"]]).reshape(-1)[indices].astype(np.float64)
        expected = expected.astype(np.float64)
        update = np.max(np.abs(expected - was), initial=0.0)
        scale = update if update > 0 else max(np.max(np.abs(expected), initial=0.0), 1e-30)
        # Two float32 ulps of the value are rounding, whichever side rounded: not counted against the update.
        ulps = 2 * np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64)
        difference = np.max(np.maximum(np.abs(got.astype(np.float64) - expected) - ulps, 0.0), initial=0.0)
        errors.append((parameter["name"], float(difference / scale) if np.all(np.isfinite(got)) else float("inf")))
    return sorted(errors, key=lambda e: -e[1])


def _raise_if_oom(error, stage):
    if any(marker in str(error) for marker in OOM_MARKERS):
        raise OutOfMemory(f"out of memory at {stage}: {str(error).splitlines()[0][:300]}") from error
    raise error


def run(step, platform, runs, perturb=False):
    """Compiles, checks and times the step; returns the figures as a dict (`agreement` among them)."""
    # jax's GPU client takes 75% of the device by default: the question is whether the step fits the whole card.
    os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.95")
    import jax

    jax.config.update("jax_enable_x64", True)  # the int64 step counter and dropout seed states
    from jax.extend.backend import get_backend
    from jaxlib import xla_client

    backend = get_backend("cuda" if platform == "gpu" else "cpu")
    device = backend.local_devices()[0]
    manifest = step.manifest
    figures = {"name": manifest["name"], "platform": platform, "device": device.device_kind,
               "jaxlib": jax.__version__, "preset": manifest["preset"], "precision": manifest["precision"],
               "batch": manifest["batch"], "seq": manifest["seq"], "micro_batch": manifest["micro_batch"]}
    started = time.perf_counter()
    stablehlo = stablehlo_bytecode(step.program)
    try:
        executable = backend.compile_and_load(stablehlo, xla_client.DeviceList((device,)),
                                              xla_client.CompileOptions())
    except Exception as error:  # noqa: BLE001  (jaxlib raises its own runtime error type)
        _raise_if_oom(error, "compile")
    figures["compile_s"] = round(time.perf_counter() - started, 2)
    stats = executable.get_compiled_memory_stats()
    figures.update(argument_bytes=int(stats.argument_size_in_bytes), temporary_bytes=int(stats.temp_size_in_bytes),
                   output_bytes=int(stats.output_size_in_bytes), alias_bytes=int(stats.alias_size_in_bytes))

    before = step.arguments()  # what TensorFlow's run started from
    arguments = [jax.device_put(value, device) for value in (step.arguments(perturb=True) if perturb else before)]
    try:
        started = time.perf_counter()
        outputs = executable.execute(arguments)
        jax.block_until_ready(outputs)
        figures["first_step_s"] = round(time.perf_counter() - started, 3)
        figures["donated"] = all(arguments[o["parameter"]].is_deleted() for o in step.outputs)
        if step.check is None:
            figures["agreement"] = "not checked (the export carries no TensorFlow results)"
        else:
            errors = compare(step, before, [np.asarray(o) for o in outputs])
            name, worst = errors[0]
            tolerance = TOLERANCES[(manifest["precision"], platform)]
            figures.update(worst_error=worst, worst_output=name, tolerance=tolerance)
            figures["agreement"] = ("ok" if worst <= tolerance else
                                    f"FAILED ({name} differs from TensorFlow's run by {worst:.3g} of its update, "
                                    f"over the {tolerance:g} allowed for {manifest['precision']} on {platform})")
        arguments = _next_arguments(step, arguments, outputs)
        started = time.perf_counter()
        for _ in range(runs):
            outputs = executable.execute(arguments)
            arguments = _next_arguments(step, arguments, outputs)
        jax.block_until_ready(outputs)
        elapsed = time.perf_counter() - started
    except Exception as error:  # noqa: BLE001
        _raise_if_oom(error, "run")
    memory = device.memory_stats() or {}
    figures["peak_bytes"] = memory.get("peak_bytes_in_use")
    step_s = elapsed / runs
    tflops = manifest["model_flops_per_step"] / step_s / 1e12
    figures.update(step_s=round(step_s, 5), sequences_per_s=round(manifest["batch"] / step_s, 2),
                   tflops=round(tflops, 3))
    spec = device_spec(device.device_kind) if platform == "gpu" else None
    peak = getattr(spec, PEAK_COLUMN[manifest["precision"]]) if spec else None
    figures["peak_tflops"] = peak
    figures["mfu"] = round(tflops / peak, 4) if peak else None
    return figures


def _next_arguments(step, arguments, outputs):
    """The next step's arguments: each updated variable replaced by the output that updates it."""
    arguments = list(arguments)
    for output in step.outputs:
        arguments[output["parameter"]] = outputs[output["index"]]
    return arguments


def report(figures):
    """The printed lines, the agreement last."""
    gib = 2.0 ** 30
    peak = figures.get("peak_bytes")
    lines = [
        f"step: {figures['name']} ({figures['preset']} {figures['precision']}, {figures['batch']}x{figures['seq']}, "
        f"micro-batch {figures['micro_batch']}) on {figures['device']} ({figures['platform']}), jaxlib "
        f"{figures['jaxlib']}: the compiled step alone under jaxlib's XLA, without TensorFlow's loop and input "
        f"pipeline",
        f"compile: {figures['compile_s']} s (HLO -> StableHLO -> XLA), first step {figures['first_step_s']} s",
        f"XLA buffers: arguments {figures['argument_bytes'] / gib:.3f} GiB, temporaries "
        f"{figures['temporary_bytes'] / gib:.3f} GiB, outputs {figures['output_bytes'] / gib:.3f} GiB "
        f"(aliased to arguments {figures['alias_bytes'] / gib:.3f} GiB; "
        f"updated variables {'donated' if figures['donated'] else 'NOT donated: copied each step'})",
        f"device peak memory: {peak / gib:.3f} GiB" if peak is not None
        else "device peak memory: not reported by this platform",
        f"step: {figures['step_s'] * 1e3:.2f} ms, {figures['sequences_per_s']} sequences/s, "
        f"{figures['tflops']} TFLOP/s (model FLOPs), "
        + (f"MFU {figures['mfu']:.1%} of {figures['peak_tflops']} TFLOP/s ({figures['device']} data-sheet dense peak)"
           if figures.get("mfu") is not None else "MFU: no data-sheet peak for this device"),
    ]
    if "worst_error" in figures:
        lines.append(f"check: worst output {figures['worst_output']}, {figures['worst_error']:.3g} of its update "
                     f"(tolerance {figures['tolerance']:g})")
    lines.append(f"agreement: {figures['agreement']}")
    return lines


def main(argv=None):
    args = parse_args(argv)
    step = ExportedStep(args.folder)
    try:
        figures = run(step, args.platform, args.runs, args.perturb)
    except OutOfMemory as error:
        figures = {"name": step.manifest["name"], "platform": args.platform, "agreement": f"FAILED ({error})"}
        lines = [f"agreement: FAILED ({error})"]
    else:
        lines = report(figures)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f)
    print("\n".join(lines), flush=True)
    return 0 if figures["agreement"] == "ok" or figures["agreement"].startswith("not checked") else 1


if __name__ == "__main__":
    sys.exit(main())

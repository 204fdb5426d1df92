"""Where the device time of an exported training step goes: runs a step written by `tools/xla/export_xla_step.py` under
jax's profiler and prints its device time kernel by kernel and grouped by what the kernels compute. Needs only jax,
jaxlib and numpy (never TensorFlow), like `tools/xla/run_xla_step.py`, whose loader it uses.

    PYTHONPATH=. python tools/xla/profile_xla_step.py xla_steps/large_128_mb256 --platform=gpu
    PYTHONPATH=. python tools/xla/profile_xla_step.py /tmp/xla_tiny --platform=cpu --runs=2  # a CPU's figures

The program is converted to StableHLO keeping TensorFlow's op names as locations (`stablehlo_bytecode(...,
keep_op_names=True)`), so XLA's compiled program carries each op's TensorFlow name
(`pretrainer/bert/layer_3/self/Softmax`) beside its HLO; each profiled kernel is put in one group by its HLO
instruction and that name (`group_of`). On a GPU the kernels are the device's stream events; on a
CPU, XLA's thunks on the host's threads (their sum is CPU time across threads, not a step's wall time). One JSON
line per profile goes to `--results` (default bench/results/profile_xla_step/): the step row's fields, the groups
in milliseconds per step and the top kernels.
"""

import argparse
import collections
import glob
import os
import re
import sys
import tempfile
import time
import warnings

from run_xla_step import ExportedStep
from stablehlo_program import stablehlo_bytecode

from bench import harness

GROUPS = ("encoder matmuls", "head and embedding matmuls", "attention batched matmuls", "cuDNN flash attention",
          "softmax, mask, dropout", "LayerNorm", "GELU and other element-wise", "losses",
          "random-number generation", "optimizer and clipping", "copies and transposes", "other")
MATMUL_TARGETS = ("gemm", "matmul", "cublas")  # custom-call targets XLA:GPU gives matrix products
CONTAINERS = ("while", "conditional", "call", "async-start", "async-done", "async-update")  # time of their bodies
MOVES = {"copy", "transpose", "bitcast", "reshape", "parameter", "copy-start", "copy-done", "tuple",
         "get-tuple-element", "constant", "broadcast", "slice", "concatenate", "dynamic-slice",
         "dynamic-update-slice"}
INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*\S.*?\s([a-z][\w\-]*)\(")


class Instruction:
    """One instruction of XLA's compiled program: its opcode, TensorFlow op name, the opcodes of the computation a
    fusion calls, and the batch dimensions of its (or its fusion's) matrix product."""

    def __init__(self, name, opcode, op_name, called, target, batch_dims):
        self.name, self.opcode, self.op_name = name, opcode, op_name
        self.called, self.target, self.batch_dims = called, target, batch_dims


def parse_program(text):
    """{instruction name: Instruction} of a compiled program's HLO text (`executable.hlo_modules()[0].to_string()`)."""
    computations, current = {}, None
    raw = []
    for line in text.splitlines():
        header = re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if header and not line.startswith(" "):
            current = header.group(1)
            computations[current] = []
            continue
        match = INSTRUCTION.match(line)
        if not match or current is None:
            continue
        name, opcode = match.groups()
        computations[current].append((opcode, _batch_dims(line)))
        op_name = re.search(r'op_name="([^"]*)"', line)
        calls = re.search(r"calls=%?([\w.\-]+)", line)
        target = re.search(r'custom_call_target="([^"]*)"', line)
        raw.append((name, opcode, op_name.group(1) if op_name else "", calls.group(1) if calls else None,
                    target.group(1) if target else "", _batch_dims(line)))
    program = {}
    for name, opcode, op_name, calls, target, batch_dims in raw:
        called = computations.get(calls, [])
        if batch_dims is None:
            batch_dims = next((b for op, b in called if op in ("dot", "convolution") and b is not None), None)
        program[name] = Instruction(name, opcode, op_name, {op for op, _ in called}, target, batch_dims)
    return program


def _batch_dims(line):
    """How many batch dimensions a dot (or a GEMM custom call's backend config) names; None if neither."""
    dims = re.search(r"lhs_batch_dims=\{([0-9,]*)\}", line) or re.search(r'"lhs_batch_dimensions":\[([^\]]*)\]', line)
    if dims:
        return len([d for d in dims.group(1).split(",") if d.strip()])
    return 0 if re.search(r"\sdot\(", line) else None


def group_of(instruction, kernel_name=""):
    """The group (one of `GROUPS`) of a kernel of `instruction` (None: an event without an HLO instruction)."""
    if instruction is None:
        return "copies and transposes" if re.search(r"[Mm]emcpy|[Mm]emset", kernel_name) else "other"
    op_name, opcode, called = instruction.op_name, instruction.opcode, instruction.called
    target = instruction.target.lower()
    if "cudnn$fmha" in target:
        return "cuDNN flash attention"
    if "adam_weight_decay" in op_name or "global_norm" in op_name or op_name.startswith("cond"):
        return "optimizer and clipping"
    if "random" in op_name or opcode.startswith("rng") or any(op.startswith("rng") for op in called):
        return "random-number generation"
    is_matmul = (opcode in ("dot", "convolution") or {"dot", "convolution"} & called
                 or any(word in target for word in MATMUL_TARGETS))
    if is_matmul:
        if (instruction.batch_dims or 0) >= 2:
            return "attention batched matmuls"
        return "encoder matmuls" if re.search(r"/layer_\d+", op_name) else "head and embedding matmuls"
    if opcode in MOVES or (opcode == "fusion" and called and called <= MOVES):
        return "copies and transposes"
    if "LayerNorm" in op_name:
        return "LayerNorm"
    if re.search(r"/self(_\d+)?/", op_name):  # the attention layer's scope (TensorFlow may suffix "_1")
        return "softmax, mask, dropout"
    if "rsqrt" in called:  # a LayerNorm fusion whose root XLA named after another op
        return "LayerNorm"
    if "CrossEntropy" in op_name or "loss" in op_name:
        return "losses"
    if opcode == "fusion" or called:
        return "GELU and other element-wise"
    return "GELU and other element-wise" if opcode not in ("custom-call", "all-reduce", "send", "recv") else "other"


def kernel_events(profile_file):
    """([(hlo_op or None, kernel name, duration ns)], ["plane: line, ..."]) of the device's kernels in a profile
    (`.xplane.pb`): a GPU's stream events, or on a CPU the host threads' XLA thunks; then what the profile holds."""
    from jax.profiler import ProfileData

    data = ProfileData.from_file(profile_file)
    planes = [f"{p.name}: {', '.join(line.name for line in p.lines)}" for p in data.planes]
    device_planes = [p for p in data.planes if p.name.startswith("/device:GPU")]
    events = []
    if device_planes:
        for plane in device_planes:
            # The raw kernels are on the stream lines; a profile without them may still have XLA's op line, and
            # lines of derived events (steps, modules) hold spans of many kernels, which would count them twice.
            lines = [line for line in plane.lines if line.name.startswith("Stream")]
            lines = lines or [line for line in plane.lines if line.name == "XLA Ops"]
            for line in lines:
                for event in line.events:
                    stats = _stats(event)
                    events.append((stats.get("hlo_op"), event.name, event.duration_ns))
        return events, planes
    for plane in data.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            for event in line.events:
                stats = _stats(event)
                if "hlo_op" in stats:
                    events.append((stats["hlo_op"], event.name, event.duration_ns))
    return events, planes


def _stats(event):
    """An event's statistics as a dict (jaxlib 0.11.2 warns that its stats type has no module: harmless)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return dict(event.stats)


def profile(step, platform, runs, trace_dir, timed_runs=0, warmup_runs=1):
    """Compiles the step, runs `warmup_runs` steps, times `timed_runs` steps without the profiler (the row's speed;
    else the profiled steps' wall time), then runs `runs` steps under the profiler; returns (figures, kernels):
    kernels are [(group, hlo_op, kernel name, op name, total ns)] over the profiled steps."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.95")
    import jax

    jax.config.update("jax_enable_x64", True)  # the int64 step counter and dropout seed states
    from jax.extend.backend import get_backend
    from jaxlib import xla_client

    backend = get_backend("cuda" if platform == "gpu" else "cpu")
    device = backend.local_devices()[0]
    started = time.perf_counter()
    executable = backend.compile_and_load(stablehlo_bytecode(step.program, keep_op_names=True),
                                          xla_client.DeviceList((device,)),
                                          xla_client.CompileOptions())
    compile_s = time.perf_counter() - started
    program = parse_program(executable.hlo_modules()[0].to_string())

    arguments = [jax.device_put(value, device) for value in step.arguments()]
    for _ in range(max(warmup_runs, 1)):  # the first step autotunes and allocates: never timed
        arguments = _run(step, executable, arguments)
    jax.block_until_ready(arguments)
    started = time.perf_counter()
    for _ in range(timed_runs):
        arguments = _run(step, executable, arguments)
    jax.block_until_ready(arguments)
    timed_s = (time.perf_counter() - started) / timed_runs if timed_runs else None
    os.makedirs(trace_dir, exist_ok=True)
    jax.profiler.start_trace(trace_dir)
    started = time.perf_counter()
    for _ in range(runs):
        arguments = _run(step, executable, arguments)
    jax.block_until_ready(arguments)
    elapsed = time.perf_counter() - started
    jax.profiler.stop_trace()
    files = sorted(glob.glob(os.path.join(trace_dir, "**", "*.xplane.pb"), recursive=True), key=os.path.getmtime)
    totals = collections.defaultdict(float)
    events, planes = kernel_events(files[-1])
    by_kernel_name = {re.sub(r"[.-]", "_", name): instruction for name, instruction in program.items()}
    for hlo_op, kernel, duration in events:
        # A kernel without its instruction's name: XLA:GPU names a fusion's kernel after it, "." and "-" as "_".
        instruction = program.get(hlo_op) if hlo_op else by_kernel_name.get(kernel)
        if instruction is not None and instruction.opcode in CONTAINERS:
            continue  # a loop's or call's span holds its body's kernels, counted on their own
        totals[(group_of(instruction, kernel), hlo_op, kernel, instruction.op_name if instruction else "")] += duration
    kernels = sorted(((*key, ns) for key, ns in totals.items()), key=lambda k: -k[-1])
    targets = collections.Counter(i.target for i in program.values() if i.target)
    figures = {"device": device.device_kind, "platform": platform, "jaxlib": jax.__version__,
               "custom_calls": dict(targets), "xla_flags": os.environ.get("XLA_FLAGS", ""),
               "compile_s": round(compile_s, 2), "runs": runs, "step_s": timed_s or elapsed / runs,
               "profiled_step_s": elapsed / runs, "timed_runs": timed_runs, "warmup_runs": max(warmup_runs, 1),
               "trace": files[-1], "planes": planes}
    return figures, kernels


def _run(step, executable, arguments):
    """One step; the next step's arguments (each updated variable replaced by its output, donated as in training)."""
    outputs = executable.execute(arguments)
    arguments = list(arguments)
    for output in step.outputs:
        arguments[output["parameter"]] = outputs[output["index"]]
    return arguments


def summarize(step, figures, kernels, variant, run_id, top):
    """(printed lines, the result row)."""
    manifest = step.manifest
    runs = figures["runs"]
    device_ms = sum(k[-1] for k in kernels) / runs / 1e6
    groups = collections.Counter()
    for group, *_, ns in kernels:
        groups[group] += ns / runs / 1e6
    flops_per_sequence = manifest["model_flops_per_step"] / manifest["batch"]
    row = harness.step_row("bert_tf", variant, figures["device"], manifest["preset"], manifest["seq"],
                               manifest["batch"], manifest["micro_batch"], manifest["batch"] / figures["step_s"],
                               flops_per_sequence, run_id)
    row.update(platform=figures["platform"], jaxlib=figures["jaxlib"], precision=manifest["precision"],
               name=manifest["name"], attention=manifest.get("attention", "einsum"),
               overrides=manifest.get("overrides", {}), warmup_steps=figures["warmup_runs"],
               timed_steps=figures["timed_runs"], profiled_steps=runs,
               xla_flags=figures["xla_flags"], custom_calls=figures["custom_calls"],
               step_ms=round(figures["step_s"] * 1e3, 3), profiled_step_ms=round(figures["profiled_step_s"] * 1e3, 3),
               device_ms=round(device_ms, 3),
               compile_s=figures["compile_s"], groups={g: round(groups[g], 4) for g in GROUPS if groups[g]},
               top_kernels=[{"group": g, "hlo_op": op, "kernel": kernel[:120], "op_name": name[:160],
                             "ms": round(ns / runs / 1e6, 4)} for g, op, kernel, name, ns in kernels[:top]])
    time_kind = "device time" if figures["platform"] == "gpu" else "CPU time summed over XLA's threads"
    lines = [f"profile: {manifest['name']} ({manifest['preset']} {manifest['precision']}, {manifest['batch']}x"
             f"{manifest['seq']}, micro-batch {manifest['micro_batch']}) on {figures['device']}, jaxlib "
             f"{figures['jaxlib']}, {runs} step(s) profiled; the compiled step alone, without TensorFlow's loop and "
             f"input pipeline",
             f"step: {row['step_ms']:.2f} ms wall ({figures['timed_runs']} steps timed without the profiler; "
             f"{row['profiled_step_ms']:.2f} ms under it), {device_ms:.2f} ms {time_kind}, {row['sequences_per_s']} "
             f"sequences/s, MFU {row['mfu']:.1%} of {harness.DENSE_BF16_PEAK_TFLOPS} TFLOP/s",
             f"custom calls in the compiled program: {figures['custom_calls'] or 'none'}; XLA_FLAGS="
             f"{figures['xla_flags'] or '(unset)'}",
             f"groups ({time_kind} per step):"]
    for group in GROUPS:
        if groups[group]:
            lines.append(f"  {group:<28} {groups[group]:10.3f} ms {groups[group] / device_ms:6.1%}")
    lines.append(f"top {top} kernels:")
    for group, op, kernel, name, ns in kernels[:top]:
        lines.append(f"  {ns / runs / 1e6:9.3f} ms  {group:<28} {op or '-'}  {kernel[:60]}  {name[:80]}")
    return lines, row


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="A folder written by tools/xla/export_xla_step.py.")
    parser.add_argument("--platform", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--runs", type=int, default=3, help="Steps profiled (after the unprofiled ones).")
    parser.add_argument("--warmup_runs", type=int, default=1, help="Untimed steps first (at least one).")
    parser.add_argument("--timed_runs", type=int, default=10,
                        help="Steps timed without the profiler first, for the row's speed (0: the profiled steps').")
    parser.add_argument("--top", type=int, default=25, help="Kernels listed one by one.")
    parser.add_argument("--variant", default=None,
                        help="The row's `variant` (default: the step's, harness.step_variant).")
    parser.add_argument("--run_id", default=None, help="The row's `run_id` (default: the start time).")
    parser.add_argument("--results", default=os.path.join(harness.RESULTS, "profile_xla_step"),
                        help="The folder the result line is appended to (results.jsonl).")
    parser.add_argument("--trace_dir", default=None, help="Where the profiler writes (default: a temporary folder).")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    step = ExportedStep(args.folder)
    trace_dir = args.trace_dir or tempfile.mkdtemp(prefix="profile_xla_step_")
    figures, kernels = profile(step, args.platform, args.runs, trace_dir, args.timed_runs, args.warmup_runs)
    variant = args.variant or harness.step_variant(step.manifest)
    lines, row = summarize(step, figures, kernels, variant, args.run_id or harness.new_run_id(), args.top)
    if not kernels:  # the step's speed is still a result: the row is written without groups
        lines.append(f"profile: no kernels found in {figures['trace']}: the profiler recorded no device events "
                     f"(its planes: {', '.join(figures['planes'])})")
    harness.append_row(args.results, row)
    print("\n".join(lines), flush=True)
    return 0 if kernels else 1


if __name__ == "__main__":
    sys.exit(main())

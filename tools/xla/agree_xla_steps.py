"""Two exported training steps of one model, run from the same weights and batch: whether every output agrees, and
how fast each step is. The reference is the first (today's attention); the candidate the second (e.g. the same model
with `model.attention=cudnn_flash`). Needs only jax, jaxlib and numpy, like `tools/xla/run_xla_step.py`.

    PYTHONPATH=. python3 tools/xla/agree_xla_steps.py xla_steps/gpu_session/slice4_128_einsum_nodrop \\
        xla_steps/gpu_session/slice4_128_cudnn_flash --platform=gpu --results=bench/results

Both steps must take the same parameters (names, shapes, dtypes: the same model, optimizer and batch). Each is run
once from the same arguments; every output (the updated variables, the loss and metric sums) is compared: a float
output by its largest difference as a fraction of the reference's change of it in that step, an integer one exactly.
Then each is timed over `--runs` steps. One row per step goes to `--results`/agree_xla_steps/results.jsonl
(`bench.harness.step_row`'s fields with `agreement`, `worst_error` and `worst_output`), and the last line printed is
`agreement: ok` or `agreement: FAILED ...` (exit 1).
"""

import argparse
import os
import sys
import time

import numpy as np
from run_xla_step import ExportedStep
from stablehlo_program import stablehlo_bytecode

from bench import harness

# The largest difference allowed, as a fraction of the reference's update of that output: both steps compute in
# bfloat16, and fusing attention reorders its roundings; 0.1 is run_xla_step's GPU bound for bf16 steps.
TOLERANCE = 0.1


def parameter_signature(step):
    return [(p["name"], tuple(p["shape"]), p["dtype"]) for p in step.parameters]


def compare_outputs(step, before, reference, candidate):
    """[(output's parameter name, difference as a fraction of the reference's update; inf for integers that differ
    or values that are not finite)], worst first."""
    errors = []
    for output in step.outputs:
        name = step.parameters[output["parameter"]]["name"]
        ours, theirs = (np.asarray(x[output["index"]]) for x in (reference, candidate))
        if not np.issubdtype(ours.dtype, np.floating):
            errors.append((name, 0.0 if np.array_equal(ours, theirs) else float("inf")))
            continue
        ours, theirs = ours.astype(np.float64), theirs.astype(np.float64)
        was = np.asarray(before[output["parameter"]]).astype(np.float64)
        update = np.max(np.abs(ours - was), initial=0.0)
        scale = update if update > 0 else max(np.max(np.abs(ours), initial=0.0), 1e-30)
        difference = np.max(np.abs(theirs - ours), initial=0.0)
        errors.append((name, float(difference / scale) if np.all(np.isfinite(theirs)) else float("inf")))
    return sorted(errors, key=lambda e: -e[1])


def run(reference, candidate, platform, runs, perturb=False, warmup_runs=1):
    """(figures of each step, errors): compiles both, runs each once from the same arguments and compares the
    outputs, then runs `warmup_runs` - 1 more steps of each and times `runs`."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.95")
    import jax

    jax.config.update("jax_enable_x64", True)
    from jax.extend.backend import get_backend
    from jaxlib import xla_client

    if parameter_signature(reference) != parameter_signature(candidate):
        raise ValueError(f"{reference.folder} and {candidate.folder} take different parameters: export both from the "
                         f"same model, batch and optimizer.")
    backend = get_backend("cuda" if platform == "gpu" else "cpu")
    device = backend.local_devices()[0]
    before = reference.arguments()
    outputs, figures = [], []
    for step, arguments in ((reference, before), (candidate, candidate.arguments(perturb=perturb))):
        started = time.perf_counter()
        executable = backend.compile_and_load(stablehlo_bytecode(step.program), xla_client.DeviceList((device,)),
                                              xla_client.CompileOptions())
        compile_s = time.perf_counter() - started
        values = [jax.device_put(value, device) for value in arguments]
        result = executable.execute(values)
        outputs.append([np.asarray(x) for x in result])
        values = _next(step, values, result)
        for _ in range(warmup_runs - 1):
            values = _next(step, values, executable.execute(values))
        jax.block_until_ready(values)
        started = time.perf_counter()
        for _ in range(runs):
            values = _next(step, values, executable.execute(values))
        jax.block_until_ready(values)
        figures.append({"device": device.device_kind, "compile_s": round(compile_s, 2),
                        "step_s": (time.perf_counter() - started) / runs})
    return figures, compare_outputs(reference, before, *outputs)


def _next(step, arguments, outputs):
    arguments = list(arguments)
    for output in step.outputs:
        arguments[output["parameter"]] = outputs[output["index"]]
    return arguments


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", help="A step folder (tools/xla/export_xla_step.py): today's computation.")
    parser.add_argument("candidate", help="A step folder of the same model computed another way.")
    parser.add_argument("--platform", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--warmup_runs", type=int, default=1, help="Untimed steps of each first (the compared one "
                                                                    "among them).")
    parser.add_argument("--runs", type=int, default=10, help="Steps timed for each.")
    parser.add_argument("--perturb", action="store_true",
                        help="Move one weight of the candidate's arguments, so the check must fail (the negative "
                             "control).")
    parser.add_argument("--run_id", default=None)
    parser.add_argument("--results", default=harness.RESULTS, help="Rows go to RESULTS/agree_xla_steps/.")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    reference, candidate = ExportedStep(args.reference), ExportedStep(args.candidate)
    figures, errors = run(reference, candidate, args.platform, args.runs, args.perturb, max(args.warmup_runs, 1))
    name, worst = errors[0]
    agreement = "ok" if worst <= TOLERANCE else (
        f"FAILED ({name} differs by {worst:.3g} of its update, over the {TOLERANCE:g} allowed)")
    run_id = args.run_id or harness.new_run_id()
    for step, step_figures in zip((reference, candidate), figures):
        manifest = step.manifest
        row = harness.step_row(
            "bert_tf", harness.step_variant(manifest), step_figures["device"], manifest["preset"],
            manifest["seq"], manifest["batch"], manifest["micro_batch"], manifest["batch"] / step_figures["step_s"],
            manifest["model_flops_per_step"] / manifest["batch"], run_id)
        row.update(name=manifest["name"], compile_s=step_figures["compile_s"],
                   warmup_steps=max(args.warmup_runs, 1), timed_steps=args.runs,
                   step_ms=round(step_figures["step_s"] * 1e3, 3), agreement=agreement, worst_error=worst,
                   worst_output=name, reference=reference.manifest["name"], platform=args.platform)
        harness.append_row(os.path.join(args.results, "agree_xla_steps"), row)
        print(f"{manifest['name']} ({row['variant']}): {row['step_ms']:.2f} ms/step, {row['sequences_per_s']} "
              f"sequences/s, MFU {row['mfu']:.1%}, compiled in {row['compile_s']} s", flush=True)
    print(f"worst output: {name}, {worst:.3g} of its update (tolerance {TOLERANCE:g})")
    print(f"agreement: {agreement}", flush=True)
    return 0 if agreement == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())

"""The one tool behind configs/platforms.yaml: it compiles the training step for each accelerator without the
accelerator, records XLA's buffer sizes as raw rows (one JSON object per line, with the command and `source`) under
tools/xla/results/plan_platforms/, and writes the file's figures and micro-batches from those rows by the plan in
`bert_tf.platforms` (docs/accelerators.md, "Platforms"). Each subcommand runs on the Python it names:

    # XLA:CPU's estimate (fixed + per sequence), TensorFlow in .venv:
    .venv/bin/python tools/xla/plan_platforms.py cpu --config=bert_large_paper \\
        --jsonl=tools/xla/results/plan_platforms/xla_cpu.jsonl
    # the TPU loop's step (TensorFlow's lowering, nothing run), whole or cut to a few blocks, in .venv:
    .venv/bin/python tools/xla/plan_platforms.py export --preset=large --seq=512 --micro_batch=8 --layers=1 \\
        --out=xla_steps/tpu/large_512_mb8_l1
    # XLA:TPU (libtpu, `make tpu-venv`) or XLA:GPU (jaxlib's CUDA plugin, `make jax-cuda-venv`) compiling exported
    # steps for a device that is not there; bert_tf is not installed in those Pythons, so the repository is put on
    # their path:
    PYTHONPATH=. .venv-tpu/bin/python tools/xla/plan_platforms.py compile --target=tpu_v5e \\
        xla_steps/tpu/large_512_mb8_l1 --jsonl=tools/xla/results/plan_platforms/xla_tpu.jsonl
    PYTHONPATH=. .venv-jax-cuda/bin/python tools/xla/plan_platforms.py compile xla_steps/large_128_mb256 \\
        --jsonl=tools/xla/results/plan_platforms/xla_gpu.jsonl              # add --memory_scale=2, see below
    # a queue of TPU steps exported and compiled one at a time (resumable; lines "tpu_v5e large 512 8 1"):
    nice -n 19 .venv/bin/python tools/xla/plan_platforms.py queue queue.txt \\
        --jsonl=tools/xla/results/plan_platforms/xla_tpu.jsonl
    # configs/platforms.yaml from the rows (any Python with bert_tf), and docs/measurements.md's TPU tables:
    .venv/bin/python tools/xla/plan_platforms.py write
    .venv/bin/python tools/xla/plan_platforms.py tables

Both device compilers rematerialize (recompute activations instead of keeping them) when a step would not fit a
limit derived from the device's memory. `--memory_scale=2` compiles for a device twice as large (GPU: the target's
device_memory_size; TPU: libtpu's `--xla_tpu_max_hbm_size_mib`): its peak is what the step holds without that
recomputation, the figure a micro-batch is planned with. A compile whose step already has a row for the same device
and memory scale is skipped, so a second call resumes.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import time

TOOLS_XLA = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(TOOLS_XLA))
RESULTS = os.path.join(TOOLS_XLA, "results", "plan_platforms")
ROW_FILES = ("xla_cpu", "xla_gpu", "xla_tpu")
GPU_TARGET_FILE = os.path.join(TOOLS_XLA, "h100_sxm_target.txtpb")
PRESET_RECIPES = {"large": "bert_large_paper"}  # every other preset takes bert_base_paper's recipe


def command_line():
    """The command as it was typed, for the rows."""
    return " ".join([os.path.relpath(sys.executable, REPO) if sys.executable.startswith(REPO) else "python"]
                    + [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])


def append_row(path, row):
    print(json.dumps(row), flush=True)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


def export(args):
    """Lowers the TPU loop's step (`lower_training_loop` under `OneDeviceStrategy`, whose update takes TPUStrategy's
    `merge_call` branch: forward, backward, the accumulation of `--batch / --micro_batch` micro-batches in a
    `tf.while_loop`, clipping and AdamWeightDecay) for the CPU, in the paper's recipe for the preset in
    mixed_bfloat16 at the phase of `--seq` tokens, and writes `program.hlo.pb.gz` and `manifest.json`."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import tensorflow as tf
    import xla_step_format as fmt  # a neighbour

    from bert_tf.accelerators.flops import training_flops_per_sequence
    from bert_tf.analysis.compiled_program import lower_training_loop
    from bert_tf.training.pretraining import resolve_bert_config
    from bert_tf.training.recipe import load_recipe
    from bert_tf.training.trainer import micro_batching

    started = time.time()
    recipe = load_recipe(PRESET_RECIPES.get(args.preset, "bert_base_paper")).override(
        {"model.preset": args.preset, "mixed_precision": args.precision, "model.num_hidden_layers": args.layers})
    phases = [i for i, phase in enumerate(recipe.phases) if phase.max_seq_length == args.seq]
    if not phases:
        raise SystemExit(f"--seq={args.seq}: {recipe.name} has phases at "
                         f"{', '.join(str(p.max_seq_length) for p in recipe.phases)} tokens: use one of those.")
    phase = recipe.phases[phases[0]]
    micro, accumulation = micro_batching(args.batch, args.micro_batch)
    keras.utils.set_random_seed(recipe.seed)
    loop = lower_training_loop(recipe, phases[0], micro, accumulation_steps=accumulation, steps=1,
                               strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))
    program = loop.compiler_ir("hlo_serialized")
    config = resolve_bert_config(recipe)
    os.makedirs(args.out, exist_ok=True)
    with gzip.open(os.path.join(args.out, fmt.PROGRAM_FILE), "wb", compresslevel=9) as f:
        f.write(program)
    manifest = {
        "format": fmt.FORMAT_VERSION, "name": os.path.basename(os.path.normpath(args.out)), "step": "tpu_loop",
        "update_branch": loop.update_branch, "preset": args.preset, "precision": args.precision,
        "recipe": recipe.name, "batch": args.batch, "seq": args.seq, "preds": phase.max_predictions_per_seq,
        "micro_batch": micro, "accumulation_steps": accumulation, "num_hidden_layers": config.num_hidden_layers,
        "model_flops_per_step": args.batch * training_flops_per_sequence(config, args.seq,
                                                                         phase.max_predictions_per_seq,
                                                                         recipe.use_next_sentence),
        "exported_with": {"tensorflow": tf.__version__, "keras": keras.__version__},
        "export_seconds": round(time.time() - started, 1),
    }
    with open(os.path.join(args.out, fmt.MANIFEST_FILE), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    print(f"exported the TPU loop's step ({manifest['update_branch']}): {args.preset} ({config.num_hidden_layers} "
          f"blocks) {args.precision} {args.batch}x{args.seq} in {accumulation} micro-batch(es) of {micro}, to "
          f"{args.out} in {manifest['export_seconds']} s")
    return 0


def compile_step(folder, devices, client, tpu):
    """Compiles one exported step for the target; returns (stats, seconds, extra fields). A TPU client takes an
    `ir.Module` (it refuses the raw bytes with a TypeError) and reports what it rematerialized."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir
    from jaxlib import xla_client
    from stablehlo_program import stablehlo_bytecode  # a neighbour

    from bert_tf.platforms.compiler_rows import remat_instructions

    with gzip.open(os.path.join(folder, "program.hlo.pb.gz")) as f:
        program = f.read()
    started = time.perf_counter()
    try:
        bytecode = stablehlo_bytecode(program)
    except RuntimeError as error:
        raise RuntimeError(f"{folder}: {error}") from error
    device_list = xla_client.DeviceList(tuple(devices))
    if tpu:
        with jax_mlir.make_ir_context():
            executable = client.compile(ir.Module.parse(bytecode), executable_devices=device_list,
                                        compile_options=xla_client.CompileOptions())
    else:
        executable = client.compile(bytecode, device_list, xla_client.CompileOptions())
    seconds = time.perf_counter() - started
    stats = executable.get_compiled_memory_stats()
    extra = {}
    if tpu:  # XLA:TPU: whether it recomputed to fit, and its cost model's view of the step
        extra["remat_instructions"] = remat_instructions(executable.hlo_modules()[0].to_string())
        costs = executable.cost_analysis()
        costs = costs[0] if isinstance(costs, (list, tuple)) else costs
        extra["cost_model"] = {key: float(costs[key]) for key in ("flops", "bytes accessed", "transcendentals",
                                                                   "optimal_seconds") if key in costs}
    return ({"argument_bytes": stats.argument_size_in_bytes, "temporary_bytes": stats.temp_size_in_bytes,
             "output_bytes": stats.output_size_in_bytes, "alias_bytes": stats.alias_size_in_bytes}, seconds, extra)


def compile_steps(args):
    """XLA's buffer sizes of exported steps, compiled for a GPU target description or one TPU chip."""
    from bert_tf.platforms import compile_targets as targets
    from bert_tf.platforms.compiler_rows import GIB, compiled_row, done_keys, read_rows, step_folders

    tpu = args.target in targets.TPU_TARGETS
    if tpu:
        topology_name, _ = targets.TPU_TARGETS[args.target]
        device_bytes = int(targets.tpu_hbm_gib(args.target) * GIB)
        flags = targets.tpu_init_args(targets.tpu_hbm_gib(args.target), args.memory_scale)
        os.environ["LIBTPU_INIT_ARGS"] = " ".join(filter(None, (os.environ.get("LIBTPU_INIT_ARGS"), flags)))
        # Compile-only chips share no hardware, so a second libtpu process need not wait for the first one's lock.
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    elif not os.path.exists(args.target):
        raise SystemExit(f"--target={args.target}: neither a file nor a TPU chip: give a GpuTargetConfigProto file "
                         f"or one of {', '.join(targets.TPU_TARGETS)}")
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")  # no GPU, so no driver to check against
    import jax
    from jax.experimental import topologies

    jax.config.update("jax_enable_x64", True)  # the int64 step counter and dropout seed states
    versions = {"jaxlib": jax.__version__}
    if tpu:
        from importlib import metadata

        devices = topologies.get_topology_desc(topology_name, "tpu",
                                               **targets.TPU_TOPOLOGY_OPTIONS.get(args.target, {})).devices[:1]
        versions["compiler"] = f"libtpu {metadata.version('libtpu')}"
    else:
        with open(args.target, encoding="utf-8") as f:
            target = f.read()
        device_bytes = targets.device_memory_bytes(target)
        devices = topologies.get_topology_desc("", "cuda", target_config=targets.scaled_target(
            target, args.memory_scale), topology="1x1x1").devices
    skip = done_keys(read_rows(args.jsonl))
    for folder in step_folders(args.steps):
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        if (manifest["name"], devices[0].device_kind, args.memory_scale) in skip:
            print(f"# {manifest['name']}: in {args.jsonl} already", file=sys.stderr, flush=True)
            continue
        try:
            stats, seconds, extra = compile_step(folder, devices, devices[0].client, tpu)
        except Exception as error:  # noqa: BLE001 - only the compiler's out-of-memory verdict is a result
            if "RESOURCE_EXHAUSTED" not in str(error):
                raise
            stats, seconds, extra = None, 0.0, {"error": str(error).strip().splitlines()[0][:400]}
        append_row(args.jsonl, compiled_row(manifest["name"], manifest, stats, device_bytes, seconds,
                                            devices[0].device_kind, versions,
                                            {"memory_scale": args.memory_scale, "command": command_line(),
                                             "extra": extra}))
    return 0


def step_name(preset, seq, micro_batch, layers=None):
    """The step folder's name: `large_512_mb16`, or `large_512_mb16_l1` for a model cut to one block."""
    return f"{preset}_{seq}_mb{micro_batch}" + (f"_l{layers}" if layers else "")


def read_queue(path):
    """[(target, preset, seq, micro_batch, layers or None, memory_scale)] from a queue file: lines `target preset
    seq micro_batch [layers] [memory_scale]` (`-` for the whole model's layers), `#` starting a comment."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.split("#")[0].split()
            if not fields:
                continue
            if not 4 <= len(fields) <= 6:
                raise SystemExit(f"{path}:{number}: {line.strip()!r} is not 'target preset seq micro_batch "
                                 f"[layers] [memory_scale]'")
            layers = int(fields[4]) if len(fields) > 4 and fields[4] != "-" else None
            scale = float(fields[5]) if len(fields) > 5 else 1
            entries.append((fields[0], fields[1], int(fields[2]), int(fields[3]), layers,
                            int(scale) if scale == int(scale) else scale))
    return entries


def queue(args):
    """Exports (with `--python`, skipped when the folder exists) and compiles (with `--tpu_python`) each step of
    the queue file, one at a time, reading the file again before each step so lines can be added while it runs."""
    from bert_tf.platforms.compile_targets import TPU_TARGETS
    from bert_tf.platforms.compiler_rows import done_keys, read_rows

    attempted = set()
    while True:
        done = done_keys(read_rows(args.jsonl))
        pending = [e for e in read_queue(args.queue) if e not in attempted
                   and (step_name(*e[1:5]), TPU_TARGETS[e[0]][1], e[5]) not in done]
        if not pending:
            return 0
        entry = pending[0]
        attempted.add(entry)
        target, preset, seq, micro, layers, scale = entry
        folder = os.path.join(args.steps_dir, step_name(preset, seq, micro, layers))
        tool = os.path.abspath(__file__)
        if not os.path.exists(os.path.join(folder, "manifest.json")):
            command = [args.python, tool, "export", f"--preset={preset}", f"--seq={seq}", f"--micro_batch={micro}",
                       f"--out={folder}"] + ([f"--layers={layers}"] if layers else [])
            if subprocess.run(command, stderr=subprocess.DEVNULL).returncode:
                print(f"# export failed: {' '.join(command)}", flush=True)
                continue
        command = [args.tpu_python, tool, "compile", f"--target={target}", folder, f"--jsonl={args.jsonl}",
                   f"--memory_scale={scale}"]
        result = subprocess.run(command, stderr=subprocess.PIPE, text=True, cwd=REPO,
                                env={**os.environ, "PYTHONPATH": REPO})
        if result.returncode:
            print(f"# compile failed ({target} {folder}): {result.stderr.strip().splitlines()[-1:]}", flush=True)


def cpu(args):
    """XLA:CPU's estimate of a recipe's step, one row per phase: the fixed and per-sequence GiB at the model's depth
    (`bert_tf.analysis.memory_estimate`). The two micro-batches hold as many tokens at every length (4 and 16
    sequences at 512 tokens, 16 and 64 at 128): at 128 tokens 4 and 16 sequences leave the step's peak at the fixed
    buffers (the masked-LM head's vocabulary-sized gradients), and the line through them understates what each
    further sequence costs."""
    import tensorflow as tf

    from bert_tf.analysis.memory_estimate import estimate_step_memory
    from bert_tf.platforms.micro_batch import GIB
    from bert_tf.training.recipe import load_recipe

    recipe = load_recipe(args.config).override({"mixed_precision": args.mixed_precision})
    if args.row_packing:
        recipe = recipe.override({"row_packing.enabled": True})
    for index, phase in enumerate(recipe.phases):
        if args.phases and phase.name not in args.phases.split(","):
            continue
        sizes = (tuple(int(s) for s in args.micro_batch_sizes.split(",")) if args.micro_batch_sizes
                 else tuple(n * max(1, 512 // phase.max_seq_length) for n in (4, 16)))
        estimate = estimate_step_memory(recipe, index, sizes)
        append_row(args.jsonl, {
            "recipe": recipe.name, "preset": recipe.model.preset, "phase": phase.name, "seq": phase.max_seq_length,
            "mixed_precision": recipe.mixed_precision, "row_packing": recipe.row_packing.enabled,
            "compiler": f"XLA:CPU, TensorFlow {tf.__version__}", "micro_batch_sizes": list(sizes),
            "depths": list(estimate.depths), "fixed_gib": round(estimate.fixed_bytes / GIB, 3),
            "per_sequence_gib": round(estimate.per_sequence_bytes / GIB, 4), "date": time.strftime("%Y-%m-%d"),
            "command": command_line(), "source": "measured"})
    return 0


def read_results(results):
    from bert_tf.platforms.compiler_rows import read_rows

    return {name: read_rows(os.path.join(results, f"{name}.jsonl")) for name in ROW_FILES}


def write(args):
    """configs/platforms.yaml from the rows; with `--check`, exit 1 (writing nothing) when the file differs."""
    from bert_tf.atomic_output import write_text_atomically
    from bert_tf.platforms.platforms_yaml import render_platforms_file

    with open(args.platforms_file, encoding="utf-8") as f:
        current = f.read()
    text = render_platforms_file(current, read_results(args.results))
    if args.check:
        print(f"{args.platforms_file}: {'up to date' if text == current else 'stale: run this tool with write'}")
        return 0 if text == current else 1
    write_text_atomically(args.platforms_file, text)
    return 0


def tables(args):
    """docs/measurements.md's two TPU tables: the compiles, one row a row of xla_tpu.jsonl, and the entries."""
    from bert_tf.platforms.compiled_plan import no_remat_peak, plan_tpu
    from bert_tf.platforms.micro_batch import GIB

    rows = read_results(args.results)["xla_tpu"]
    lines = ["| chip | step (mixed_bfloat16, 256 sequences) | blocks | micro-batch | arguments | temporaries | peak "
             "(of HBM) | recomputed | compile |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        step = f"{row['preset']}, {row['seq']} tokens" + (f", HBM x{row['memory_scale']}"
                                                          if row["memory_scale"] != 1 else "")
        if "peak_bytes" not in row:
            lines.append(f"| {row['device']} | {step} | {row['layers']} | {row['micro_batch']} | refused: "
                         f"{row['error'][:60]} | | | | |")
            continue
        lines.append(f"| {row['device']} | {step} | {row['layers']} | {row['micro_batch']} | "
                     f"{row['argument_bytes'] / GIB:.2f} GiB | {row['temporary_bytes'] / GIB:.2f} GiB | "
                     f"{row['peak_bytes'] / GIB:.2f} GiB ({row['fraction_of_device']:.0%}) | "
                     f"{row['remat_instructions']} | {row['compile_s']:.0f} s |")
    lines += ["", "| chip | step | micro-batch | peak (of HBM) | twice it | figures |", "|---|---|---|---|---|---|"]
    for target, entry in plan_tpu(rows, args.margin).items():
        for preset, by_seq in entry["figures"].items():
            for seq, steps in by_seq.items():
                micro = entry["models"][preset][seq]
                hbm = entry["device_gib"] * GIB
                cells = [f"{no_remat_peak(steps[m]) / GIB:.2f} GiB ({no_remat_peak(steps[m]) / hbm:.0%})"
                         if m in steps else "-" for m in (micro, 2 * micro)]
                source = "extrapolated" if steps[micro]["extrapolated"] else "compiled"
                if (preset, seq) in entry["borrowed"]:
                    source += " (v5e's shallow steps)"
                lines.append(f"| {target} ({entry['device_gib']:g} GiB) | {preset}, {seq} tokens | {micro} | "
                             f"{cells[0]} | {cells[1]} | {source} |")
    print("\n".join(lines))
    return 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    step = commands.add_parser("export", help="Export the TPU loop's step (TensorFlow).")
    step.add_argument("--preset", default="tiny", help="BertConfig preset: tiny, mini, base, large, ...")
    step.add_argument("--precision", default="mixed_bfloat16", choices=("float32", "mixed_bfloat16"))
    step.add_argument("--seq", type=int, default=128, help="Tokens per sequence: the recipe's phase of this length.")
    step.add_argument("--batch", type=int, default=256, help="Sequences per step on the replica (the recipe's 256).")
    step.add_argument("--micro_batch", type=int, required=True, help="Sequences per forward/backward pass.")
    step.add_argument("--layers", type=int, default=None, help="Transformer blocks (default: the preset's).")
    step.add_argument("--out", required=True, help="The folder to write (created; files in it are replaced).")
    step.set_defaults(run=export)
    compiled = commands.add_parser("compile", help="Compile exported steps for a GPU target or a TPU chip (jax).")
    compiled.add_argument("steps", nargs="+", help="Step folders (this tool's export, tools/xla/export_xla_step.py) "
                                                   "or folders of them.")
    compiled.add_argument("--target", default=GPU_TARGET_FILE,
                          help="A GpuTargetConfigProto in text form, or a TPU chip: tpu_v4, tpu_v5e, tpu_v5p, tpu_v6e.")
    compiled.add_argument("--jsonl", default=None, help="Append each step's row here; skip steps it already has.")
    compiled.add_argument("--memory_scale", type=float, default=1,
                          help="Compile for a device with this many times the target's memory (2: the step's "
                               "buffers without the rematerialization XLA does to fit the real device).")
    compiled.set_defaults(run=compile_steps)
    queued = commands.add_parser("queue", help="Export and compile a queue of TPU steps, one at a time.")
    queued.add_argument("queue", help="The queue file (read again before each step).")
    queued.add_argument("--jsonl", required=True, help="The rows file the compiles append to.")
    queued.add_argument("--steps_dir", default=os.path.join(REPO, "xla_steps", "tpu"))
    queued.add_argument("--python", default=os.path.join(REPO, ".venv", "bin", "python"))
    queued.add_argument("--tpu_python", default=os.path.join(REPO, ".venv-tpu", "bin", "python"))
    queued.set_defaults(run=queue)
    estimate = commands.add_parser("cpu", help="XLA:CPU's estimate of a recipe's step (TensorFlow).")
    estimate.add_argument("--config", default="bert_base_paper", help="A recipe in configs/pretrain/ (or a path).")
    estimate.add_argument("--mixed_precision", default="mixed_bfloat16", help="The compute precision to estimate.")
    estimate.add_argument("--micro_batch_sizes", default=None, help="The two micro-batch sizes to compile, e.g. 4,16 "
                          "(default: 4 and 16 sequences at 512 tokens, as many tokens at other lengths).")
    estimate.add_argument("--phases", default=None, help="Names of the phases to estimate, e.g. seq512 (default: all).")
    estimate.add_argument("--row_packing", action="store_true", help="Estimate packed rows (the recipe's "
                          "row_packing settings).")
    estimate.add_argument("--jsonl", default=None, help="Append each phase's row here.")
    estimate.set_defaults(run=cpu)
    for name, run, text in (("write", write, "Write configs/platforms.yaml from the rows."),
                            ("tables", tables, "Print docs/measurements.md's TPU tables from the rows.")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--results", default=RESULTS, help="The folder of the rows (xla_cpu.jsonl, xla_gpu.jsonl, "
                                                            "xla_tpu.jsonl).")
        sub.set_defaults(run=run)
    commands.choices["write"].add_argument("--platforms_file", default=os.path.join(REPO, "configs",
                                                                                    "platforms.yaml"))
    commands.choices["write"].add_argument("--check", action="store_true", help="Only say whether it is stale.")
    commands.choices["tables"].add_argument("--margin", type=float, default=0.2, help="The TPU entries' margin.")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

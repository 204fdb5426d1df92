"""Exports one training step of bert_tf as the XLA program a GPU run compiles, for `tools/xla/run_xla_step.py` to run
on a machine with a GPU and jax (jax 0.11.2, no TensorFlow needed). See docs/accelerators.md,
"TensorFlow's step under XLA:GPU".

The step is built as `bert-pretrain --platform=h100_80gb` builds it: the paper recipe of the preset, the model and
optimizer made under `replica_updated_counters`, and a `Trainer` with `jit_compile="step"` (forward, backward, the
micro-batch accumulation, clipping and AdamWeightDecay's update in one XLA cluster), on one replica. The program is
TensorFlow's unoptimised `HloModuleProto` of that cluster (`experimental_get_compiler_ir(...)(stage=
"hlo_serialized")`); its entry parameters are the batch (dict keys sorted, as `tf.nest` flattens it) and then the
step function's captured variables in order, and its outputs the variables it writes (`input_output_alias`).

Weights and Adam slots do not travel: both sides regenerate them from a seed (`xla_step_format.pattern`). The step
counter is put at the middle of the warmup, so the learning rate and the update are not zero. TensorFlow runs the
step on this CPU and a fixed sample of each output is written for the runner to compare; with `--no_check` (a
paper-batch step: 256 sequences of BERT-large do not fit this machine's memory to run) only the program is
exported.

    PYTHONPATH=. .venv/bin/python tools/xla/export_xla_step.py --preset=tiny --precision=float32 --batch=8 \\
        --seq=16 --preds=4 --out=/tmp/xla_tiny
    PYTHONPATH=. .venv/bin/python tools/xla/export_xla_step.py --preset=large --precision=mixed_bfloat16 \\
        --batch=256 --seq=128 --preds=20 --micro_batch=256 --no_check --out=xla_steps/large_128_mb256
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import xla_step_format as fmt  # a neighbour: the script's folder is on the path

from bench.synthetic_batch import synthetic_batch

BATCH_SEED = 20261127
PRESET_RECIPES = {"large": "bert_large_paper"}  # every other preset takes bert_base_paper's recipe


def parse_args(argv=None):
    """The flags, parsed before TensorFlow is imported (so `--help` is fast)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny", help="BertConfig preset: tiny, mini, base, large, ...")
    parser.add_argument("--precision", default="float32", choices=("float32", "mixed_bfloat16", "mixed_float16"))
    parser.add_argument("--batch", type=int, default=8, help="Sequences per step (one replica's batch).")
    parser.add_argument("--seq", type=int, default=16, help="Tokens per sequence.")
    parser.add_argument("--preds", type=int, default=4, help="Masked-LM predictions per sequence.")
    parser.add_argument("--micro_batch", type=int, default=None,
                        help="Sequences per forward/backward pass (default: the whole batch).")
    parser.add_argument("--no_check", dest="check", action="store_false",
                        help="Export the program only; by default TensorFlow runs the step here and a sample of "
                        "its outputs is written for the runner to compare (a paper-batch step is too big for that).")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                        help="A recipe setting by path, as bert-pretrain's --set (model.num_hidden_layers=4, "
                        "model.attention=cudnn_flash); repeatable.")
    parser.add_argument("--out", required=True, help="The folder to write (created; files in it are replaced).")
    args = parser.parse_args(argv)
    for setting in args.overrides:
        if "=" not in setting:
            parser.error(f"--set={setting}: write PATH=VALUE, e.g. --set=model.num_hidden_layers=4")
    return args


def weight_pattern(path, index):
    """How a float32 variable is regenerated: {seed, center, scale} by what it is (a weight near its initial
    scale, LayerNorm gains near 1, Adam's first moment of either sign, its second moment positive and of the
    first's squared size, so the update is of the learning rate's size)."""
    if path.endswith("_adam_m"):
        center, scale = 0.0, 2e-3
    elif path.endswith("_adam_v"):
        center, scale = 2e-6, 2e-6
    elif "gamma" in path:
        center, scale = 1.0, 0.2
    else:
        center, scale = 0.0, 0.04
    return {"seed": index, "center": center, "scale": scale}


def export_step(preset, precision, batch, seq, preds, out, micro_batch=None, check=False, overrides=None):
    """Builds the step, writes the folder `out` (see `xla_step_format`) and returns the manifest. `overrides`:
    {recipe path: value} set after the preset's (a string is read as YAML, as `--set` reads it)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import tensorflow as tf

    from bert_tf.accelerators.cudnn_flash_attention import attention_kernel
    from bert_tf.accelerators.flops import training_flops_per_sequence
    from bert_tf.compat.tensorflow_internals import hlo_module
    from bert_tf.modeling.attention_kernel import fused_attention_kernel
    from bert_tf.optimizers.optimization import create_optimizer
    from bert_tf.training.pretraining import create_pretrainer, resolve_bert_config
    from bert_tf.training.recipe import load_recipe
    from bert_tf.training.strategy import worker_layout
    from bert_tf.training.trainer import Trainer, micro_batching, replica_updated_counters

    started = time.time()
    recipe = load_recipe(PRESET_RECIPES.get(preset, "bert_base_paper")).override({
        "model.preset": preset, "mixed_precision": precision, "jit_compile": True, "jit_compile_scope": "step",
        **(overrides or {})})
    if check and recipe.model.attention != "einsum":
        raise ValueError(f"model.attention={recipe.model.attention} runs on GPUs only, so TensorFlow cannot run the "
                         f"step here to check it: export with --no_check.")
    micro, accumulation = micro_batching(batch, micro_batch)
    strategy = tf.distribute.get_strategy()
    config = resolve_bert_config(recipe)
    keras.utils.set_random_seed(recipe.seed)
    with strategy.scope():  # as PretrainingRun.prepare builds a run's step
        model = create_pretrainer(config, recipe.mixed_precision, recipe.use_next_sentence)
        with replica_updated_counters():
            optimizer = create_optimizer(recipe)
    trainer = Trainer(strategy, worker_layout(strategy), model, optimizer, max_micro_batch_size=micro,
                      jit_compile="step", all_reduce_dtype=recipe.all_reduce_dtype)
    step_counter = recipe.num_warmup_steps // 2
    optimizer.iterations.assign(step_counter)

    batch_values = synthetic_batch(config.vocab_size, batch, seq, preds, seed=BATCH_SEED)
    features = {k: tf.constant(v) for k, v in batch_values.items()}
    step = trainer._step  # the replica step a run compiles with jit_compile_scope: step
    with fused_attention_kernel(attention_kernel(recipe.model.attention)):  # as a run's steps are traced
        captured = step.get_concrete_function(features).captured_inputs
        program = step.experimental_get_compiler_ir(features)(stage="hlo_serialized")
    module = hlo_module(program)

    variables = {id(v.handle): v for v in
                 list(model.variables) + list(optimizer.variables) + [trainer._totals]}
    unknown = [c for c in captured if id(c) not in variables]
    if unknown:
        raise RuntimeError(f"The step captures {len(unknown)} tensor(s) that are not the model's, the optimizer's or "
                           f"the trainer's variables: {unknown[:3]}")
    parameters, stored, patterned = [], {}, []
    for index, name in enumerate(sorted(batch_values)):  # tf.nest's order: dict keys sorted
        value = batch_values[name]
        parameters.append({"index": index, "name": f"batch/{name}", "shape": list(value.shape),
                           "dtype": str(value.dtype), "source": "stored"})
        stored[str(index)] = value
    for index, handle in enumerate(captured, start=len(parameters)):
        variable = variables[id(handle)]
        path = getattr(variable, "path", variable.name)  # Keras variables have a path, the accumulator a name
        entry = {"index": index, "name": path, "shape": list(variable.shape),
                 "dtype": tf.as_dtype(variable.dtype).name, "source": "stored"}
        if entry["dtype"] == "float32" and variable is not trainer._totals:
            entry.update(source="pattern", pattern=weight_pattern(path, index))
            patterned.append((entry, variable))
        else:  # the step counter, dropout seed states, the metric accumulator: small, and not regenerable
            stored[str(index)] = np.asarray(variable.numpy())
        parameters.append(entry)
    _check_program_parameters(module, parameters)
    outputs = [{"index": int(alias.output_shape_index[0]), "parameter": int(alias.parameter_number)}
               for alias in module.input_output_alias.entries]
    if len(outputs) != len(module.host_program_shape.result.tuple_shapes):
        raise RuntimeError("Some of the step's outputs update no parameter; the exporter expects variable writes only.")

    os.makedirs(out, exist_ok=True)
    with gzip.open(os.path.join(out, fmt.PROGRAM_FILE), "wb", compresslevel=9) as f:
        f.write(program)
    np.savez_compressed(os.path.join(out, fmt.INPUTS_FILE), **stored)
    check_seconds = None
    if check:
        check_started = time.time()
        for entry, variable in patterned:
            p = entry["pattern"]
            variable.assign(fmt.pattern(entry["shape"], p["seed"], p["center"], p["scale"]))
        step(features)
        by_parameter = {entry["index"]: variable for entry, variable in patterned}
        by_parameter.update({p["index"]: variables[id(captured[p["index"] - len(batch_values)])]
                             for p in parameters if p["source"] == "stored" and not p["name"].startswith("batch/")})
        samples = {}
        for output in outputs:
            value = np.asarray(by_parameter[output["parameter"]].numpy()).reshape(-1)
            samples[str(output["index"])] = value[fmt.sample_indices(value.size)]
        np.savez_compressed(os.path.join(out, fmt.CHECK_FILE), **samples)
        check_seconds = round(time.time() - check_started, 1)
    elif os.path.exists(os.path.join(out, fmt.CHECK_FILE)):
        os.remove(os.path.join(out, fmt.CHECK_FILE))

    manifest = {
        "format": fmt.FORMAT_VERSION, "name": os.path.basename(os.path.normpath(out)),
        "preset": preset, "precision": precision, "recipe": recipe.name, "batch": batch, "seq": seq, "preds": preds,
        "micro_batch": micro, "accumulation_steps": accumulation, "use_next_sentence": recipe.use_next_sentence,
        "parameter_count": int(sum(np.prod(v.shape) for v in model.pretraining_variables())),
        "model_flops_per_step": batch * training_flops_per_sequence(config, seq, preds, recipe.use_next_sentence),
        "step_counter": step_counter, "overrides": overrides or {}, "attention": recipe.model.attention,
        "learning_rate": float(tf.cast(optimizer.learning_rate, tf.float32).numpy()),
        "seeds": {"recipe": recipe.seed, "batch": BATCH_SEED, "weights": "the parameter's index (pattern.seed)"},
        "checked": check, "check_seconds": check_seconds,
        "exported_with": {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__},
        "export_seconds": round(time.time() - started, 1),
        "parameters": parameters, "outputs": outputs,
    }
    with open(os.path.join(out, fmt.MANIFEST_FILE), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def _check_program_parameters(module, parameters):
    """Fails unless the program's entry parameters have the shapes the manifest gives them, in its order."""
    shapes = module.host_program_shape.parameters
    if len(shapes) != len(parameters):
        raise RuntimeError(f"The program has {len(shapes)} parameters, the step function {len(parameters)}.")
    for shape, parameter in zip(shapes, parameters):
        if list(shape.dimensions) != parameter["shape"]:
            raise RuntimeError(f"Parameter {parameter['index']} ({parameter['name']}) is {list(shape.dimensions)} in "
                               f"the program, {parameter['shape']} in the step function.")


def folder_size(path):
    """Bytes of the files in a folder."""
    return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))


def main(argv=None):
    args = parse_args(argv)
    manifest = export_step(args.preset, args.precision, args.batch, args.seq, args.preds, args.out,
                           micro_batch=args.micro_batch, check=args.check,
                           overrides=dict(setting.split("=", 1) for setting in args.overrides))
    print(f"exported {manifest['preset']} {manifest['precision']} {manifest['batch']}x{manifest['seq']} "
          f"({manifest['accumulation_steps']} micro-batch(es) of {manifest['micro_batch']}), "
          f"{len(manifest['parameters'])} parameters, {'checked' if manifest['checked'] else 'not checked'}, "
          f"to {args.out}: {folder_size(args.out) / 2**20:.2f} MiB in {manifest['export_seconds']} s")


if __name__ == "__main__":
    sys.exit(main())

"""Exports the training step a TPU run builds, as the XLA program bench/estimate_xla_memory.py compiles for a TPU
chip (XLA:TPU's compiler from libtpu, no TPU needed). See docs/accelerators.md, "XLA:TPU's buffers without a TPU".

A TPU run compiles `iterations_per_loop` steps into one program, and its update takes TPUStrategy's `merge_call`
branch. The program here is that loop for one step (`bert_tf.analysis.compiled_program.lower_training_loop` under
`OneDeviceStrategy`, whose update takes the same branch) on one replica: forward, backward and the accumulation of
`--batch / --micro_batch` micro-batches in a `tf.while_loop`, clipping and AdamWeightDecay's update, lowered by
TensorFlow for the CPU (`experimental_get_compiler_ir(...)(stage="hlo_serialized")`, nothing run). The recipe is the
paper's for the preset (bert_large_paper for large, bert_base_paper otherwise) in mixed_bfloat16 at the phase of
`--seq` tokens; `--layers` cuts the model to fewer Transformer blocks (the shallow steps the memory is extrapolated
from). The folder holds `program.hlo.pb.gz` and `manifest.json` in bench/xla_step_format.py's names (no inputs: the
step is compiled, never run).

    .venv/bin/python bench/export_tpu_step.py --preset=large --seq=512 --micro_batch=32 \\
        --out=xla_steps/tpu/large_512_mb32
    .venv/bin/python bench/export_tpu_step.py --preset=base --seq=128 --micro_batch=128 --layers=1 \\
        --out=xla_steps/tpu/base_128_mb128_l1
"""

import argparse
import gzip
import json
import os
import sys
import time

import xla_step_format as fmt  # bench/ is the script's folder

PRESET_RECIPES = {"large": "bert_large_paper"}  # every other preset takes bert_base_paper's recipe


def parse_args(argv=None):
    """The flags, parsed before TensorFlow is imported (so `--help` is fast)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny", help="BertConfig preset: tiny, mini, base, large, ...")
    parser.add_argument("--precision", default="mixed_bfloat16", choices=("float32", "mixed_bfloat16"))
    parser.add_argument("--seq", type=int, default=128, help="Tokens per sequence: the recipe's phase of this length.")
    parser.add_argument("--batch", type=int, default=256, help="Sequences per step on the replica (the recipe's 256).")
    parser.add_argument("--micro_batch", type=int, required=True, help="Sequences per forward/backward pass.")
    parser.add_argument("--layers", type=int, default=None, help="Transformer blocks (default: the preset's).")
    parser.add_argument("--out", required=True, help="The folder to write (created; files in it are replaced).")
    return parser.parse_args(argv)


def export_tpu_step(preset, precision, seq, batch, micro_batch, out, layers=None):
    """Lowers the step and writes the folder `out`; returns the manifest."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import tensorflow as tf

    from bert_tf.accelerators.flops import training_flops_per_sequence
    from bert_tf.analysis.compiled_program import lower_training_loop
    from bert_tf.training.pretraining import resolve_bert_config
    from bert_tf.training.recipe import load_recipe
    from bert_tf.training.trainer import micro_batching

    started = time.time()
    recipe = load_recipe(PRESET_RECIPES.get(preset, "bert_base_paper")).override(
        {"model.preset": preset, "mixed_precision": precision, "model.num_hidden_layers": layers})
    phases = [i for i, phase in enumerate(recipe.phases) if phase.max_seq_length == seq]
    if not phases:
        raise SystemExit(f"--seq={seq}: {recipe.name} has phases at "
                         f"{', '.join(str(p.max_seq_length) for p in recipe.phases)} tokens: use one of those.")
    phase = recipe.phases[phases[0]]
    micro, accumulation = micro_batching(batch, micro_batch)
    keras.utils.set_random_seed(recipe.seed)
    loop = lower_training_loop(recipe, phases[0], micro, accumulation_steps=accumulation, steps=1,
                               strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))
    program = loop.compiler_ir("hlo_serialized")
    config = resolve_bert_config(recipe)
    os.makedirs(out, exist_ok=True)
    with gzip.open(os.path.join(out, fmt.PROGRAM_FILE), "wb", compresslevel=9) as f:
        f.write(program)
    manifest = {
        "format": fmt.FORMAT_VERSION, "name": os.path.basename(os.path.normpath(out)), "step": "tpu_loop",
        "update_branch": loop.update_branch, "preset": preset, "precision": precision, "recipe": recipe.name,
        "batch": batch, "seq": seq, "preds": phase.max_predictions_per_seq, "micro_batch": micro,
        "accumulation_steps": accumulation, "num_hidden_layers": config.num_hidden_layers,
        "model_flops_per_step": batch * training_flops_per_sequence(config, seq, phase.max_predictions_per_seq,
                                                                    recipe.use_next_sentence),
        "exported_with": {"tensorflow": tf.__version__, "keras": keras.__version__},
        "export_seconds": round(time.time() - started, 1),
    }
    with open(os.path.join(out, fmt.MANIFEST_FILE), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def main(argv=None):
    args = parse_args(argv)
    manifest = export_tpu_step(args.preset, args.precision, args.seq, args.batch, args.micro_batch, args.out,
                               layers=args.layers)
    print(f"exported the TPU loop's step ({manifest['update_branch']}): {manifest['preset']} "
          f"({manifest['num_hidden_layers']} blocks) {manifest['precision']} {manifest['batch']}x{manifest['seq']} in "
          f"{manifest['accumulation_steps']} micro-batch(es) of {manifest['micro_batch']}, to {args.out} in "
          f"{manifest['export_seconds']} s")


if __name__ == "__main__":
    sys.exit(main())

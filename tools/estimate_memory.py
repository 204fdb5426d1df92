"""Estimates the accelerator memory of a recipe's training step from XLA's buffer assignment on the CPU
(`bert_tf.analysis.memory_estimate`) and prints, per phase, one JSON line: the fixed and per-sequence GiB and the
largest micro-batch that fits each device of `bert_tf.accelerators.device_peaks` for a replica's share of the global
batch on 1, 8, 16, 32 and 64 replicas. configs/platforms.yaml quotes its output: each platform's micro-batch for a
phase is the figure for 1 replica (the largest power of two up to 256 that fits), from the phase's own line.

The two micro-batches compiled hold as many tokens at every length (4 and 16 sequences at 512 tokens, 16 and 64 at
128): at 128 tokens micro-batches of 4 and 16 leave the step's peak at the fixed buffers (the masked-LM head's
vocabulary-sized gradients), and the line through them understates what each further sequence costs.

    python tools/estimate_memory.py --config=bert_large_paper               # every phase
    python tools/estimate_memory.py --config=bert_large_paper --phases=seq512
    python tools/estimate_memory.py --config=bert_large_paper --phases=seq512 --row_packing
"""

import json
import sys

from absl import app, flags

from bert_tf.accelerators.device_peaks import DEVICES
from bert_tf.analysis.memory_estimate import GIB, estimate_step_memory
from bert_tf.training.recipe import load_recipe

FLAGS = flags.FLAGS
flags.DEFINE_string("config", "bert_base_paper", "A recipe in configs/pretrain/ (or a YAML path).")
flags.DEFINE_string("mixed_precision", "mixed_bfloat16", "The compute precision to estimate.")
flags.DEFINE_list("micro_batch_sizes", None, "The two micro-batch sizes to compile (default: 4 and 16 sequences "
                  "at 512 tokens, as many tokens at other lengths).")
flags.DEFINE_list("phases", None, "Names of the phases to estimate (default: all).")
flags.DEFINE_bool("row_packing", False, "Estimate packed rows (several instances per row, a block-diagonal "
                  "attention bias per row) with the recipe's row_packing settings.")


def main(argv):
    del argv
    recipe = load_recipe(FLAGS.config).override({"mixed_precision": FLAGS.mixed_precision})
    if FLAGS.row_packing:
        recipe = recipe.override({"row_packing.enabled": True})
    for index, phase in enumerate(recipe.phases):
        if FLAGS.phases and phase.name not in FLAGS.phases:
            continue
        sizes = (tuple(int(s) for s in FLAGS.micro_batch_sizes) if FLAGS.micro_batch_sizes
                 else tuple(n * max(1, 512 // phase.max_seq_length) for n in (4, 16)))
        estimate = estimate_step_memory(recipe, index, sizes)
        fits = {name: {replicas: estimate.max_micro_batch_size(recipe.phase_batch_size(phase) // replicas,
                                                                spec.memory_gib * GIB)
                       for replicas in (1, 8, 16, 32, 64)} for name, spec in DEVICES.items()}
        json.dump({"config": recipe.name, "mixed_precision": recipe.mixed_precision, "phase": phase.name,
                   "row_packing": recipe.row_packing.enabled,
                   "fixed_gib": round(estimate.fixed_bytes / GIB, 3),
                   "per_sequence_gib": round(estimate.per_sequence_bytes / GIB, 4),
                   "micro_batch_sizes": sizes, "max_micro_batch_size": fits}, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()


if __name__ == "__main__":
    app.run(main)

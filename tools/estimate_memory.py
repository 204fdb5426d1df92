"""Estimates the accelerator memory of a recipe's training step from XLA's buffer assignment on the CPU
(`bert_tf.analysis.memory_estimate`) and prints, per phase, one JSON line: the fixed and per-sequence GiB and the
largest micro-batch that fits each device of `bert_tf.accelerators.device_peaks` for a replica's share of the global
batch on 8, 16, 32 and 64 replicas. configs/platforms.yaml quotes its output.

    python tools/estimate_memory.py --config=bert_large_paper --phases=seq512
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
flags.DEFINE_list("micro_batch_sizes", ["4", "16"], "The two micro-batch sizes to compile.")
flags.DEFINE_list("phases", None, "Names of the phases to estimate (default: all).")


def main(argv):
    del argv
    recipe = load_recipe(FLAGS.config).with_overrides(mixed_precision=FLAGS.mixed_precision)
    sizes = tuple(int(s) for s in FLAGS.micro_batch_sizes)
    for index, phase in enumerate(recipe.phases):
        if FLAGS.phases and phase.name not in FLAGS.phases:
            continue
        estimate = estimate_step_memory(recipe, index, sizes)
        fits = {name: {replicas: estimate.max_micro_batch_size(recipe.phase_batch_size(phase) // replicas,
                                                                spec.memory_gib * GIB)
                       for replicas in (8, 16, 32, 64)} for name, spec in DEVICES.items()}
        json.dump({"config": recipe.name, "mixed_precision": recipe.mixed_precision, "phase": phase.name,
                   "fixed_gib": round(estimate.fixed_bytes / GIB, 3),
                   "per_sequence_gib": round(estimate.per_sequence_bytes / GIB, 4),
                   "micro_batch_sizes": sizes, "max_micro_batch_size": fits}, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()


if __name__ == "__main__":
    app.run(main)

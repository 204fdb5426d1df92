"""The rows GPU benchmarks write: one JSON object per line under `bench/results/<script>/`, with the fields every
step row carries (`stack`, `variant`, `device`, `preset`, `seq`, `batch`, `micro_batch`, `sequences_per_s`, `mfu`,
`run_id`). Standard library only: the GPU machine's scripts (jax or torch, never TensorFlow) import it.

    row = step_row("bert_tf", "einsum", "NVIDIA H200", "large", 128, 256, 256, 1372.0, model_flops_per_sequence)
    append_row("bench/results/profile_xla_step", row | {"groups": {...}})
"""

import datetime
import json
import os

# BENCH_RESULTS moves them, as for every benchmark (a smoke run's lines are not results).
RESULTS = os.environ.get("BENCH_RESULTS") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
# MFU is a fraction of this: the dense bf16 peak of an H100 SXM5 and of an H200 (their data sheets agree), so rows
# from either card read on one scale.
DENSE_BF16_PEAK_TFLOPS = 989.4
STEP_FIELDS = ("stack", "variant", "device", "preset", "seq", "batch", "micro_batch", "sequences_per_s", "mfu",
               "run_id")


def new_run_id():
    """A run's id: its UTC start time, e.g. "20261128T081500Z"; every row of one run carries the same one."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def step_row(stack, variant, device, preset, seq, batch, micro_batch, sequences_per_s, flops_per_sequence,
             run_id):
    """A step row's required fields; `mfu` from the model FLOPs per sequence (the package's count) against
    `DENSE_BF16_PEAK_TFLOPS`.

    >>> step_row("bert_tf", "einsum", "cpu", "tiny", 16, 8, 8, 100.0, 1e9, "r")["mfu"]
    0.0001
    """
    mfu = sequences_per_s * flops_per_sequence / (DENSE_BF16_PEAK_TFLOPS * 1e12)
    return {"stack": stack, "variant": variant, "device": device, "preset": preset, "seq": seq, "batch": batch,
            "micro_batch": micro_batch, "sequences_per_s": round(sequences_per_s, 3), "mfu": round(mfu, 4),
            "run_id": run_id}


def append_row(directory, row, file_name="results.jsonl"):
    """Appends `row` as one JSON line to `directory`/`file_name` (made if missing) and flushes it to disk, so a
    run cut short keeps every row it finished."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, file_name), "a", encoding="utf-8") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return row


def step_variant(manifest):
    """The `variant` of an exported step (bench/export_xla_step.py's manifest): its attention ("einsum",
    "cudnn_flash"), "_nodrop" for today's attention without attention dropout, and "sliceN_" first for a model cut
    to N layers.

    >>> step_variant({"attention": "cudnn_flash", "overrides": {"model.num_hidden_layers": "4"}})
    'slice4_cudnn_flash'
    """
    overrides = manifest.get("overrides", {})
    variant = manifest.get("attention", "einsum")
    if variant == "einsum" and float(overrides.get("model.attention_probs_dropout_prob", 1)) == 0:
        variant += "_nodrop"
    layers = overrides.get("model.num_hidden_layers")
    return f"slice{layers}_{variant}" if layers else variant

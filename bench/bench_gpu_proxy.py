"""GPU proxy: the pre-training step of bert_tf's Keras layers under the JAX backend, in bf16 (run by hand).

A machine with a GPU and JAX often has no TensorFlow, so the TensorFlow training loop cannot run there; the
layers of `bert_tf.modeling` are written with `keras.ops` only and run under `KERAS_BACKEND=jax`. This script
times one pre-training step of `BertPretrainer` (masked LM tied to the word embeddings + NSP, the original
losses) as a `jax.jit`-compiled function: `model.stateless_call` under `mixed_bfloat16` (float32 weights, bfloat16
matmuls, LayerNorm and softmax in float32), `jax.value_and_grad`, and the package's own `AdamWeightDecay` (the
original update: global-norm clipping to 1.0, no bias correction, weight decay 0.01 except the variables its
regexes exclude, LayerNorm and biases) through Keras' `stateless_apply`.

Rows: the base and large presets at the phase-1 shapes (seq 128, 20 predictions; `--seq_length 512 --predictions
80` for phase 2), with the original dropout (explicit softmax + dropout on the attention probabilities, which the
backward pass recomputes from the bf16 scores: `BertSelfAttention.recomputed_attention`) and with attention dropout
0 (the layers then call
`keras.ops.dot_product_attention`, which is cuDNN flash attention on Ampere or later GPUs). The masked-LM head
computes its [P, V] logits only at the predicted positions.

GiB/seq: the step's buffers in XLA's assignment for the device (arguments, outputs, temporaries), compiled at the
batch and at half of it, the difference per sequence: the CPU estimate's method (tools/xla/plan_platforms.py cpu) on the
device's own compiler, to set beside it.

MFU = model FLOPs/s / the GPU's dense bf16 peak (H100 SXM and H200: 989 TFLOP/s; `--peak_tflops` for others).
Model FLOPs per sequence are `bert_tf.accelerators.flops.training_flops_per_sequence` (6 x weights x tokens for the
encoder's dense layers on all T tokens, 12 x L x T^2 x H for attention, the masked-LM head only at the P predicted
positions, pooler and NSP). `bert_tf`, its layers, the optimizer and the formula import no TensorFlow, which such a
machine may not have: from the repository's root, the package needs no install there.

Each row is also appended to `bench/results/bench_gpu_proxy/results.jsonl` with the fields of every GPU step row
(`stack`, `variant`, `device`, `preset`, `seq`, `batch`, `micro_batch`, `sequences_per_s`, `mfu`, `run_id`).

    KERAS_BACKEND=jax python -m bench.bench_gpu_proxy                   # on a GPU: base and large, batch 256
    KERAS_BACKEND=jax python -m bench.bench_gpu_proxy --batch_size 128 --presets large
    KERAS_BACKEND=jax python -m bench.bench_gpu_proxy --batch_size 32 --seq_length 512 --predictions 80
    KERAS_BACKEND=jax python -m bench.bench_gpu_proxy --smoke           # anywhere: tiny preset, a few steps
"""

import argparse
import functools
import os
import platform
import statistics
import time

if os.environ.setdefault("KERAS_BACKEND", "jax") != "jax":
    raise SystemExit(f"KERAS_BACKEND={os.environ['KERAS_BACKEND']}: this benchmark runs under JAX; unset it or "
                     "set KERAS_BACKEND=jax.")

try:
    import jax  # noqa: E402
    import jax.numpy as jnp  # noqa: E402
except ModuleNotFoundError:
    raise SystemExit("This benchmark needs JAX: `.venv/bin/pip install jax` (CPU, for --smoke) or run it where JAX "
                     "with CUDA is installed (a machine with a GPU and jax).") from None
import keras  # noqa: E402
import numpy as np  # noqa: E402

from bench.harness import write_result  # noqa: E402
from bench.run_header import command_line  # noqa: E402
from bench.synthetic_batch import synthetic_batch as batch_arrays  # noqa: E402
from bert_tf.accelerators.device_peaks import device_spec  # noqa: E402
from bert_tf.accelerators.flops import training_flops_per_sequence  # noqa: E402
from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.modeling import BertPretrainer  # noqa: E402
from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay  # noqa: E402


def synthetic_batch(config, batch, seq_length, num_predictions):
    """The shared synthetic batch (bench/synthetic_batch.py) as jax arrays."""
    return {k: jnp.asarray(v) for k, v in batch_arrays(config.vocab_size, batch, seq_length, num_predictions).items()}


def make_train_step(model, optimizer):
    """A jitted step (trainable, non-trainable, optimizer variables, batch) -> the same, updated, and the losses."""

    def loss_fn(trainable, non_trainable, batch):
        outputs, non_trainable = model.stateless_call(trainable, non_trainable, batch, training=True)
        losses = model.compute_losses(outputs, batch)
        return losses["loss"], (non_trainable, losses)

    @functools.partial(jax.jit, donate_argnums=(0, 1, 2))
    def train_step(trainable, non_trainable, optimizer_variables, batch):
        (_, (non_trainable, losses)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            trainable, non_trainable, batch)
        trainable, optimizer_variables = optimizer.stateless_apply(optimizer_variables, grads, trainable)
        return trainable, non_trainable, optimizer_variables, losses

    return train_step


def step_bytes(train_step, state, batch):
    """Bytes of the jitted step's buffers in XLA's assignment for this device (arguments, outputs not aliased to
    them, temporaries): what the CPU estimate (tools/xla/plan_platforms.py cpu) reads from the CPU compiler. None
    where the backend does not say."""
    analysis = train_step.lower(*state, batch).compile().memory_analysis()
    if analysis is None:
        return None
    return (analysis.argument_size_in_bytes + analysis.output_size_in_bytes - analysis.alias_size_in_bytes
            + analysis.temp_size_in_bytes)


def time_training(config, batch, steps, repeats, half_batch=None):
    """Median seconds per step over `repeats` runs of `steps` steps, after one compiling and one warm-up run, and the
    GiB per sequence of the step (compiled at `batch` and `half_batch`, the difference per sequence; None without
    `half_batch` or where the backend does not report its buffers)."""
    keras.utils.set_random_seed(0)
    model = BertPretrainer(config, dtype="mixed_bfloat16")
    optimizer = AdamWeightDecay(learning_rate=1e-4, weight_decay_rate=0.01, global_clipnorm=1.0)
    optimizer.build(model.trainable_variables)
    state = tuple([v.value for v in variables] for variables in (
        model.trainable_variables, model.non_trainable_variables, optimizer.variables))
    train_step = make_train_step(model, optimizer)
    per_sequence_gib = None
    if half_batch is not None:
        sizes = [step_bytes(train_step, state, b) for b in (batch, half_batch)]
        sequences = len(batch["input_word_ids"]) - len(half_batch["input_word_ids"])
        if None not in sizes:
            per_sequence_gib = (sizes[0] - sizes[1]) / sequences / 2 ** 30

    def run(n):
        nonlocal state
        for _ in range(n):
            *new_state, metrics = train_step(*state, batch)
            state = tuple(new_state)
        loss = float(metrics["loss"])  # waits for the device
        if not np.isfinite(loss):
            raise SystemExit(f"Non-finite loss {loss} in the benchmark's step.")
        return metrics

    start = time.perf_counter()
    run(1)
    compile_seconds = time.perf_counter() - start
    run(steps)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        metrics = run(steps)
        seconds.append((time.perf_counter() - start) / steps)
    return statistics.median(seconds), compile_seconds, {k: float(v) for k, v in metrics.items()}, per_sequence_gib


def measured_peak_flops(size, dtype=jnp.bfloat16, seconds=0.3):
    """FLOP/s of a jitted [size, size] matmul chain in `dtype` (the peak where no data sheet applies)."""
    a = jnp.asarray(np.random.default_rng(0).normal(size=(size, size)) / np.sqrt(size), dtype)

    @functools.partial(jax.jit, static_argnums=1)
    def chain(x, n):
        for _ in range(n):
            x = x @ a
        return x

    chain(a, 8).block_until_ready()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        chain(a, 8).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 8 * 2.0 * size ** 3 / best


def peak_flops(args, device):
    """(FLOP/s, how it was found): --peak_tflops, else the data-sheet bf16 peak of a known GPU, else measured."""
    if args.peak_tflops:
        return args.peak_tflops * 1e12, "--peak_tflops"
    spec = device_spec(device.device_kind)
    if spec is not None and spec.bfloat16:
        return spec.bfloat16 * 1e12, f"dense bf16 data sheet for {spec.name}"
    size = 1024 if args.smoke else 8192
    return measured_peak_flops(size), f"measured: {size}^2 bf16 jnp matmul, best of 3"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="base,large", help="comma-separated BertConfig presets")
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20, help="masked-LM predictions per sequence")
    parser.add_argument("--steps", type=int, default=10, help="steps per timed repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peak_tflops", type=float, help="the device's peak bf16 TFLOP/s (default: known or "
                                                          "measured)")
    parser.add_argument("--smoke", action="store_true", help="tiny preset, batch 8, 2 steps x 2 repeats: checks the "
                                                             "script anywhere (CPU included)")
    args = parser.parse_args()
    if args.smoke:
        args.presets, args.batch_size, args.steps, args.repeats = "tiny", 8, 2, 2

    device = jax.devices()[0]
    peak, peak_source = peak_flops(args, device)
    lines = [
        f"command: KERAS_BACKEND=jax {command_line()}",
        f"python {platform.python_version()}, jax {jax.__version__}, keras {keras.__version__}, numpy "
        f"{np.__version__}; device: {device.device_kind} ({device.platform}, {jax.device_count()} visible, one used)",
        f"peak: {peak / 1e12:.1f} TFLOP/s ({peak_source}); mixed_bfloat16; batch {args.batch_size}, seq "
        f"{args.seq_length}, {args.predictions} predictions; median of {args.repeats} x {args.steps} steps",
        "",
        "| preset | attention | dropout (hidden / attention) | seq/s | tokens/s | ms/step | MFU | GiB/seq | compile s "
        "| loss |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for preset in args.presets.split(","):
        base = BertConfig.preset(preset)
        batch = synthetic_batch(base, args.batch_size, args.seq_length, args.predictions)
        half_batch = synthetic_batch(base, args.batch_size // 2, args.seq_length, args.predictions)
        flops = training_flops_per_sequence(base, args.seq_length, args.predictions)
        for attention, config in (("explicit softmax + dropout", base),
                                  ("fused dot_product_attention", base.replace(attention_probs_dropout_prob=0.0))):
            seconds, compile_seconds, metrics, per_sequence_gib = time_training(
                config, batch, args.steps, args.repeats, half_batch)
            rate = args.batch_size / seconds
            memory = "n/a" if per_sequence_gib is None else f"{per_sequence_gib:.3f}"
            row = (f"| {preset} | {attention} | {config.hidden_dropout_prob:g} / "
                   f"{config.attention_probs_dropout_prob:g} | {rate:.1f} | {rate * args.seq_length:.0f} | "
                   f"{1000 * seconds:.1f} | {100 * rate * flops / peak:.1f}% | {memory} | {compile_seconds:.1f} | "
                   f"{metrics['loss']:.3f} |")
            lines.append(row)
            print(row, flush=True)
            write_result("bench_gpu_proxy", {
                "stack": "keras_jax", "variant": attention, "device": device.device_kind, "preset": preset,
                "seq": args.seq_length, "batch": args.batch_size, "micro_batch": args.batch_size,
                "predictions": args.predictions, "sequences_per_s": round(rate, 3),
                "mfu": round(rate * flops / peak, 4), "peak_tflops": round(peak / 1e12, 3), "peak_source": peak_source,
                "hidden_dropout": config.hidden_dropout_prob, "attention_dropout": config.attention_probs_dropout_prob,
                "gib_per_sequence": per_sequence_gib and round(per_sequence_gib, 4),
                "compile_seconds": round(compile_seconds, 1), "loss": float(metrics["loss"])})


if __name__ == "__main__":
    main()

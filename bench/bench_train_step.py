"""Training-step speed of bert_tf against keras-hub, side by side in one process (run by hand, not in CI).

Ours: `BertPretrainer` (masked LM tied to the word embeddings + NSP) trained by the pre-training loop's own
`Trainer.train_loop` (the step `bert-pretrain` runs) with the original `AdamWeightDecay` (weight decay 0.01,
global-norm clipping 1.0). Peer: keras-hub `BertBackbone` + `keras_hub.layers.MaskedLMHead` (tied to the token
embedding, as `BertMaskedLM` builds it) + a `Dense(2)` NSP classifier on the pooled output, trained by an in-graph
loop of the same shape (a `tf.range` loop of GradientTape steps, the same `AdamWeightDecay`, `SparseCategorical
Crossentropy` weighted by `masked_lm_weights`, and the weighted `sparse_categorical_accuracy` that
`BertMaskedLM.compile` adds by default).

Both get the same batch (random ids, full-length sequences, sorted distinct predicted positions), the same
optimizer and the same XLA setting: with XLA on, the forward and backward pass is compiled with XLA and the
optimizer update is not (what `Trainer(jit_compile=True)` does). After `--warmup` steps, each of `--repeats` repeats
times about `--seconds` of steps of each model, in alternating order (AB BA ...; `bench.harness.time_pair`); the
table shows the median sequences/s of each and the median of the per-repeat ratios, which a slow spell of a shared
machine hits alike. Each shape's figures are appended to `bench/results/bench_train_step/results.jsonl`.

MFU (model FLOPs utilisation) follows `bert_tf.accelerators.flops.training_flops_per_sequence`: 6 x weights x tokens for
the dense layers of the encoder on all T tokens, 12 x L x T^2 x H for the attention scores and the weighted sum,
the masked-LM head (H x H transform and H x V output) only at the P predicted positions, pooler and NSP on [CLS].
The peak is the measured FLOP/s of a 2048 x 2048 fp32 matmul on this machine (the best of three), not a data sheet.

    .venv/bin/python -m bench.bench_train_step                   # tiny and mini, seq 128 and 512, XLA off/on
    .venv/bin/python -m bench.bench_train_step --presets tiny --shapes 128 --xla off --repeats 3
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench.harness import Runner, time_pair, write_result  # noqa: E402
from bench.run_header import load_average, run_header  # noqa: E402
from bench.synthetic_batch import synthetic_batch as batch_arrays  # noqa: E402
from bert_tf.accelerators.flops import training_flops_per_sequence  # noqa: E402
from bert_tf.accelerators.peak_flops import measure_peak_flops  # noqa: E402
from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.modeling import BertPretrainer  # noqa: E402
from bert_tf.optimizers import AdamWeightDecay  # noqa: E402
from bert_tf.training.strategy import worker_layout  # noqa: E402
from bert_tf.training.trainer import Trainer  # noqa: E402

# seq length -> (batch, predictions per sequence). 512 uses 80 predictions (NVIDIA's phase 2; the original README
# suggests max_seq_length * masked_lm_prob = 77) and batch 8 so that a step takes about as long as one at 128.
SHAPES = {128: (32, 20), 512: (8, 80)}


def synthetic_batch(config, batch, seq_length, num_predictions):
    """The shared synthetic batch (bench/synthetic_batch.py) as TensorFlow tensors."""
    return {k: tf.constant(v) for k, v in batch_arrays(config.vocab_size, batch, seq_length, num_predictions).items()}


def original_optimizer():
    return AdamWeightDecay(learning_rate=1e-4, weight_decay_rate=0.01, global_clipnorm=1.0,
                           aggregate_gradients=False)


def ours(config, batch, xla):
    """A function running n steps of our pre-training loop on `batch`."""
    keras.utils.set_random_seed(0)
    strategy = tf.distribute.get_strategy()
    model = BertPretrainer(config)
    trainer = Trainer(strategy, worker_layout(strategy), model, original_optimizer(), jit_compile=xla)
    iterator = iter(tf.data.Dataset.from_tensors(batch).repeat())
    return lambda n: float(trainer.train(iterator, n).means["loss"])


def keras_hub_peer(config, batch, xla):
    """The same: keras-hub's BERT with a tied masked-LM head and an NSP dense, as in `BertMaskedLM`."""
    keras.utils.set_random_seed(0)
    init = keras.initializers.TruncatedNormal(stddev=config.initializer_range)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings, num_segments=config.type_vocab_size)
    head = keras_hub.layers.MaskedLMHead(vocabulary_size=config.vocab_size, token_embedding=backbone.token_embedding,
                                         intermediate_activation="gelu", kernel_initializer=init)
    nsp = keras.layers.Dense(2, kernel_initializer=init)
    head.build((None, None, config.hidden_size), (None, None))
    nsp.build((None, config.hidden_size))
    variables = backbone.trainable_variables + head.trainable_variables + nsp.trainable_variables
    optimizer = original_optimizer()
    optimizer.build(variables)
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def gradients(features):
        with tf.GradientTape() as tape:
            outputs = backbone({"token_ids": features["input_word_ids"], "padding_mask": features["input_mask"],
                                "segment_ids": features["input_type_ids"]}, training=True)
            logits = head(outputs["sequence_output"], mask_positions=features["masked_lm_positions"])
            mlm_loss = cross_entropy(features["masked_lm_ids"], logits, sample_weight=features["masked_lm_weights"])
            loss = mlm_loss + cross_entropy(features["next_sentence_labels"], nsp(outputs["pooled_output"]))
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
        correct = keras.metrics.sparse_categorical_accuracy(features["masked_lm_ids"], logits)
        accuracy = tf.reduce_sum(correct * features["masked_lm_weights"]) / tf.reduce_sum(features["masked_lm_weights"])
        return grads, loss, accuracy

    compute = tf.function(gradients, jit_compile=True) if xla else gradients

    @tf.function
    def loop(iterator, n):
        total = tf.constant(0.0)
        for _ in tf.range(n):
            grads, loss, accuracy = compute(next(iterator))
            optimizer.apply(grads, variables)
            total += loss + 0.0 * accuracy
        return total

    iterator = iter(tf.data.Dataset.from_tensors(batch).repeat())
    return lambda n: float(loop(iterator, tf.constant(n)).numpy())


def header(args, peak):
    command, versions, machine = run_header()
    return [
        command, versions, f"{machine.split('; ')[0]}; peak (2048^2 fp32 matmul, best of 6): {peak / 1e9:.0f} GFLOP/s",
        f"medians of {args.repeats} alternating repeats of ~{args.seconds:g} s per model (after {args.warmup} "
        "warm-up steps); ratio = median of the per-repeat ratios; load average at start/end: "
        f"{args.load_start} / {load_average()}",
        "optimizer: original AdamWeightDecay (wd 0.01, clip 1.0) for both; XLA = forward+backward compiled",
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="tiny,mini", help="comma-separated BertConfig presets")
    parser.add_argument("--shapes", default="128,512", help="comma-separated sequence lengths (128, 512)")
    parser.add_argument("--xla", default="off,on", help="off, on or off,on")
    parser.add_argument("--seconds", type=float, default=1.5, help="about how long one timed repeat runs")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps after tracing")
    parser.add_argument("--repeats", type=int, default=10, help="timed repeats per model (alternating)")
    args = parser.parse_args()
    args.load_start = load_average()
    for shape in args.shapes.split(","):
        if int(shape) not in SHAPES:
            parser.error(f"--shapes={args.shapes}: {shape} is not one of {sorted(SHAPES)}.")

    # Measured before and after the runs, the higher kept: other work on a shared machine only lowers it.
    peak = measure_peak_flops("float32", size=2048)
    results = []
    for preset in args.presets.split(","):
        config = BertConfig.preset(preset)
        for seq_length in map(int, args.shapes.split(",")):
            batch_size, num_predictions = SHAPES[seq_length]
            batch = synthetic_batch(config, batch_size, seq_length, num_predictions)
            flops = training_flops_per_sequence(config, seq_length, num_predictions)
            for xla in args.xla.split(","):
                on = xla == "on"
                timing = time_pair(Runner(ours(config, batch, on), batch_size),
                                   Runner(keras_hub_peer(config, batch, on), batch_size), args.seconds,
                                   args.warmup, args.repeats)
                (mine, theirs), ratio = timing.rates, timing.ratio
                results.append((preset, seq_length, batch_size, num_predictions, xla, mine, theirs, ratio, flops))
                write_result("bench_train_step", {
                    "preset": preset, "seq": seq_length, "batch": batch_size, "preds": num_predictions, "xla": xla,
                    "ours_sequences_per_s": round(mine, 2), "keras_hub_sequences_per_s": round(theirs, 2),
                    "ratio": round(ratio, 4), "repeats": args.repeats, "steps": list(timing.steps),
                    "flops_per_sequence": flops})
                print(f"{preset} seq {seq_length} XLA {xla}: ours {mine:.1f} seq/s, keras-hub {theirs:.1f} seq/s, "
                      f"ratio {ratio:.2f} ({args.repeats} x {timing.steps} steps)", flush=True)
    peak = max(peak, measure_peak_flops("float32", size=2048))
    rows = ["| preset | seq | batch | preds | XLA | ours seq/s | keras-hub seq/s | ratio | ours tokens/s "
            "| ours MFU | keras-hub MFU |", "|---" * 11 + "|"]
    for preset, seq_length, batch_size, num_predictions, xla, mine, theirs, ratio, flops in results:
        rows.append(f"| {preset} | {seq_length} | {batch_size} | {num_predictions} | {xla} | {mine:.1f} | "
                    f"{theirs:.1f} | {ratio:.2f} | {mine * seq_length:.0f} | "
                    f"{100 * mine * flops / peak:.1f}% | {100 * theirs * flops / peak:.1f}% |")
    print("\n".join(header(args, peak) + [""] + rows))

if __name__ == "__main__":
    main()

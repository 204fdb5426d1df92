"""Time to quality: training time for ours and keras-hub to reach a held-out masked-LM accuracy (run by hand).

    .venv/bin/python -m bench.bench_time_to_quality --max_minutes 10          # target 0.30, 10 min per side
    .venv/bin/python -m bench.bench_time_to_quality --max_minutes 0.5 --eval_every 20 --work_dir /tmp/ttq  # smoke

Data, made as `make demo` makes it, by the commands a user types (subprocesses): the World English Bible split by
chapter, every 10th chapter held out (`write_bible_split`); a WordPiece vocab learned by `bert-vocab` from the
training chapters (`--vocab_size 8000` gives ~4,300 tokens); `bert-create-pretraining-data` records of the
training chapters at every (sequence length, predictions) the recipe's phases need (`--dupe_factor` static
maskings, masked-LM prob 0.15), and one masking of the held-out chapters at the LAST phase's lengths. With
`--work_dir` the files are kept and reused by the next run.

Ours: the recipe (`--recipe`, default `demo_cpu`: its phases, batch sizes, optimizer, schedule, dropout and XLA
setting are read from configs/pretrain/, nothing here repeats them) run by the package's own `PretrainingRun` and
`Controller` (`bert-pretrain`'s code path: masked LM + NSP on the records of each phase, masked as the recipe says:
demo_cpu draws 30% afresh for every batch), with
`iterations_per_loop = --eval_every`; the controller scores the model every `--eval_every` steps and an eval action
stops the run at the target or the time cap (after a checkpoint, as a run stopped by SIGTERM).

keras-hub: `BertMaskedLM` on a `BertBackbone` of the same size (layers, width, heads, FFN, vocab, positions,
segments; keras-hub's own dropout default 0.1 and tanh GELU), no NSP head (it has none), set up as keras.io's guide
"Pretraining a Transformer from scratch with KerasNLP" (Matthew Watson, keras-io
`guides/keras_nlp/transformer_pretraining.py`) sets up its masked-LM pre-training: batch 128
(PRETRAINING_BATCH_SIZE), dynamic masking by `keras_hub.layers.MaskedLMMaskGenerator` in the tf.data pipeline at
mask_selection_rate 0.25 (MASK_RATE) with 32 predictions per 128 tokens (PREDICTIONS_PER_SEQ and SEQ_LENGTH; scaled
with the sequence length here: 8 at 32 tokens), the 80/10/10 replacement defaults, Keras `AdamW` at a constant 5e-4
(PRETRAINING_LEARNING_RATE; Keras' defaults otherwise: weight decay 0.004, no clipping) and `jit_compile=True`.
The loss and weighted accuracy are `BertMaskedLM.compile`'s defaults; `fit` runs with `steps_per_execution =
--eval_every`. The guide's mixed_float16 is left out (no float16 speed-up on CPU). [CLS], [SEP] and [PAD] are never
selected for masking, as keras-hub's `BertMaskedLMPreprocessor` does. It trains on the same token sequences as
our last phase, at its length (the length the held-out records have): each of those training records with its
masked tokens put back (`masked_lm_ids` at `masked_lm_positions`), then masked again by keras-hub.

Both are scored on the SAME held-out records with the same function: the original metric, the argmax accuracy at
the masked positions weighted by `masked_lm_weights`, over all held-out records, after every `--eval_every` steps.
The clock counts training only: from the first training call (so input pipelines and tracing count) to the
latest step, minus the evaluations (ours saves a checkpoint only at a phase's end and at the stop, after the score).
A side stops at `--target`, after `--max_minutes` of training, or (ours) at the recipe's last step. The table gives
the time to the target per side and the ratio keras-hub / ours; when a side never gets there, the best accuracy
each side reached within the same training time. The curves of both go to one PNG (accuracy vs training seconds),
and one line per side to `bench/results/bench_time_to_quality/results.jsonl`. The sides run one after the other:
run it on an otherwise idle machine (the header and the last line show the load average).
"""

import argparse
import dataclasses
import os
import tempfile
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# fit's notes that a tf.data input is not reshuffled and that BertMaskedLM's pooler gets no gradient (no NSP).
warnings.filterwarnings("ignore", category=UserWarning, module="keras")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import logging  # noqa: E402

from bench.harness import write_result  # noqa: E402
from bench.run_header import load_average, run_header  # noqa: E402
from bert_tf.demo_data import DUPE_FACTOR, HELD_OUT_EVERY, RANDOM_SEED, VOCAB_SIZE, DemoData  # noqa: E402
from bert_tf.inputs.input_spec import InputSpec  # noqa: E402
from bert_tf.inputs.pretraining_dataset import pretraining_dataset  # noqa: E402
from bert_tf.records.schema import read_schema  # noqa: E402
from bert_tf.text.vocabulary import read_vocab_file  # noqa: E402
from bert_tf.training.pretraining import PretrainingRun, resolve_bert_config  # noqa: E402
from bert_tf.training.recipe import load_recipe  # noqa: E402

# keras.io's guide "Pretraining a Transformer from scratch with KerasNLP" (see the docstring).
GUIDE_BATCH_SIZE, GUIDE_SEQ_LENGTH, GUIDE_MASK_RATE, GUIDE_PREDICTIONS, GUIDE_LEARNING_RATE = 128, 128, 0.25, 32, 5e-4
EVAL_BATCH_SIZE = 64


# ---- data: the commands a user types -------------------------------------------------------------------------

def prepare_data(work_dir, recipe, args):
    """(vocab file, {phase name: training records}, held-out records at the last phase's lengths, chapters)."""
    data = DemoData(work_dir, args.vocab_size, dupe_factor=args.dupe_factor, random_seed=args.seed, quiet=True)
    vocab = data.vocab()
    train, heldout = data.recipe_records(recipe)
    return vocab, train, heldout, data.chapters


# ---- the clock and the metric shared by both sides -------------------------------------------------------------

class Progress:
    """The training clock (evaluations and saves excluded) and the accuracy curve of one side."""

    def __init__(self, name, args, heldout_batches, logits_fn):
        self.name, self.args = name, args
        self.heldout_batches, self.logits_fn = heldout_batches, tf.function(logits_fn)
        self.start = None
        self.excluded = 0.0
        self.curve = [(0, 0.0, None)]  # (step, training seconds, held-out accuracy)
        self.reached = None

    def start_clock(self):
        self.start = time.perf_counter()

    def training_seconds(self):
        return time.perf_counter() - self.start - self.excluded

    def excluding(self, action):
        """Runs `action()` off the clock and returns its result."""
        started = time.perf_counter()
        try:
            return action()
        finally:
            self.excluded += time.perf_counter() - started

    def score(self):
        """The held-out metrics, off the clock (ours: the controller's evaluator)."""
        return {"masked_lm_accuracy": self.excluding(self.heldout_accuracy)}

    def record(self, step, accuracy):
        """Adds the score at `step` to the curve; True when the side should stop (target reached or time cap)."""
        seconds = self.training_seconds()
        self.curve.append((step, seconds, accuracy))
        print(f"{self.name}: step {step}, {seconds:.0f} s of training, held-out masked-LM accuracy {accuracy:.4f}",
              flush=True)
        if accuracy >= self.args.target and self.reached is None:
            self.reached = (step, seconds)
        return self.reached is not None or seconds >= 60 * self.args.max_minutes

    def heldout_accuracy(self):
        """The original metric: argmax accuracy at the masked positions weighted by `masked_lm_weights`, over all
        held-out records."""
        correct = weight = 0.0
        for features in self.heldout_batches:
            predictions = tf.argmax(self.logits_fn(features), -1, output_type=tf.int32)
            weights = tf.cast(features["masked_lm_weights"], tf.float32)
            hits = tf.cast(tf.equal(predictions, features["masked_lm_ids"]), tf.float32)
            correct += float(tf.reduce_sum(hits * weights))
            weight += float(tf.reduce_sum(weights))
        return correct / weight

    def best_within(self, seconds):
        """The best accuracy scored within `seconds` of training, as text ("-" before the first score)."""
        best = max((a for _, s, a in self.curve if a is not None and s <= seconds), default=None)
        return "-" if best is None else f"{best:.4f}"


# ---- ours: the package's run and controller -------------------------------------------------------------------

def train_ours(recipe, model_dir, heldout_batches, args):
    """The run's own controller, scoring every `--eval_every` steps; its eval action ends the run at the target or
    the time cap."""
    run = PretrainingRun(recipe, model_dir)
    run.prepare()
    progress = Progress("ours", args, heldout_batches,
                        lambda f: run.parts.model(f, training=False)["mlm_logits"])
    controller = dataclasses.replace(
        run.parts.controller, evaluator=progress.score, eval_every_steps=args.eval_every,
        eval_actions=[lambda results: progress.record(results["step"], results["masked_lm_accuracy"])])
    run.parts = dataclasses.replace(run.parts, controller=controller)
    progress.start_clock()
    run.train()
    return progress


# ---- keras-hub: BertMaskedLM as the keras.io guide trains it ---------------------------------------------------

def unmasked_tokens(features):
    """The record's token ids with the original tokens put back at its masked positions."""
    seq_length = features["input_word_ids"].shape[-1]
    at = tf.one_hot(features["masked_lm_positions"], seq_length, dtype=tf.int32)  # [batch, predictions, seq]
    at *= tf.cast(features["masked_lm_weights"] > 0, tf.int32)[..., None]
    masked = tf.reduce_max(at, axis=1) > 0
    original = tf.reduce_sum(at * features["masked_lm_ids"][..., None], axis=1)
    return tf.where(masked, original, features["input_word_ids"])


def keras_hub_inputs(features, token_ids=None, mask_positions=None):
    return {"token_ids": features["input_word_ids"] if token_ids is None else token_ids,
            "padding_mask": features["input_mask"] > 0, "segment_ids": features["input_type_ids"],
            "mask_positions": features["masked_lm_positions"] if mask_positions is None else mask_positions}


def guide_predictions(seq_length):
    """The guide's predictions per sequence (32 at 128 tokens) at another length."""
    return round(GUIDE_PREDICTIONS * seq_length / GUIDE_SEQ_LENGTH)


def keras_hub_dataset(train_records, seq_length, predictions, vocab, args):
    """(inputs, mask ids, mask weights) batches: our records' token sequences, masked again by keras-hub."""
    tokens = read_vocab_file(vocab)
    masker = keras_hub.layers.MaskedLMMaskGenerator(
        vocabulary_size=len(tokens), mask_selection_rate=GUIDE_MASK_RATE, mask_token_id=tokens.index("[MASK]"),
        mask_selection_length=guide_predictions(seq_length),
        unselectable_token_ids=[tokens.index(t) for t in ("[PAD]", "[CLS]", "[SEP]")])

    def mask(features):
        masked = masker(unmasked_tokens(features))
        return (keras_hub_inputs(features, masked["token_ids"], masked["mask_positions"]), masked["mask_ids"],
                masked["mask_weights"])

    # The 1,000-record buffer this benchmark's figures were measured with (runs use the recipe's 100).
    dataset = pretraining_dataset(InputSpec(train_records, seq_length, predictions, GUIDE_BATCH_SIZE, seed=args.seed,
                                            shuffle_buffer=1000))
    return dataset.map(mask, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


class _ScoreEveryExecution(keras.callbacks.Callback):
    def __init__(self, progress, steps_per_epoch):
        super().__init__()
        self.progress, self.steps_per_epoch = progress, steps_per_epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.progress.record((epoch + 1) * self.steps_per_epoch, self.progress.score()["masked_lm_accuracy"]):
            self.model.stop_training = True


def train_keras_hub(config, train_records, seq_length, predictions, vocab, heldout_batches, args):
    keras.utils.set_random_seed(args.seed)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size)
    model = keras_hub.models.BertMaskedLM(backbone)
    model.compile(optimizer=keras.optimizers.AdamW(GUIDE_LEARNING_RATE), jit_compile=True,
                  steps_per_execution=args.eval_every)
    dataset = keras_hub_dataset(train_records, seq_length, predictions, vocab, args)
    progress = Progress("keras-hub", args, heldout_batches, lambda f: model(keras_hub_inputs(f), training=False))
    progress.start_clock()
    # One fit call: with steps_per_epoch Keras keeps the iterator across epochs, so each "epoch" is the next
    # eval_every batches of the same stream.
    model.fit(dataset, steps_per_epoch=args.eval_every, epochs=10 ** 9, verbose=0,
              callbacks=[_ScoreEveryExecution(progress, args.eval_every)])
    return progress


# ---- the report ------------------------------------------------------------------------------------------------

def plot(curves, target, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, progress in curves.items():
        points = [(s, a) for _, s, a in progress.curve if a is not None]
        axes.plot([s for s, _ in points], [a for _, a in points], marker=".", label=name)
    axes.axhline(target, color="grey", linestyle="--", linewidth=0.8, label=f"target {target:.2f}")
    axes.set_xlabel("training seconds (evaluations excluded)")
    axes.set_ylabel("held-out masked-LM accuracy")
    axes.set_title("Time to quality: World English Bible, held-out chapters")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def describe_recipe(recipe, config):
    phases = ", ".join(f"{p.name}: {p.num_steps} steps x {recipe.phase_batch_size(p)} seq x {p.max_seq_length} "
                       f"tokens ({p.max_predictions_per_seq} pred.)" for p in recipe.phases)
    return (f"ours: recipe {recipe.name} ({phases}); {recipe.optimizer.name} peak lr {recipe.learning_rate:g}, "
            f"warmup {recipe.num_warmup_steps}; dropout {config.hidden_dropout_prob:g}; XLA "
            f"{'on' if recipe.jit_compile else 'off'}; MLM + NSP")


def report_lines(runs, args, recipe, config, chapters, heldout_records, seq_length, data_seconds):
    lines = [
        f"data: World English Bible, every {HELD_OUT_EVERY}th chapter held out"
        + (f" ({chapters['train']} training, {chapters['heldout']} held-out chapters)" if chapters else "")
        + f"; vocab {config.vocab_size} tokens (bert-vocab); held-out records {heldout_records} at "
        f"{seq_length} tokens; data made in {data_seconds:.0f} s",
        f"model: L={config.num_hidden_layers}, H={config.hidden_size}, A={config.num_attention_heads}, "
        f"FFN {config.intermediate_size}, V={config.vocab_size}",
        *([describe_recipe(recipe, config)] if "ours" in runs else []),
        *([f"keras-hub: BertMaskedLM, batch {GUIDE_BATCH_SIZE} x {seq_length} tokens, MaskedLMMaskGenerator rate "
           f"{GUIDE_MASK_RATE} ({guide_predictions(seq_length)} pred.), AdamW {GUIDE_LEARNING_RATE:g} constant, "
           f"dropout 0.1, XLA on; MLM only"] if "keras-hub" in runs else []),
        f"evaluated every {args.eval_every} steps; target {args.target:.2f}; cap {args.max_minutes:g} min per side",
        "",
        "| side | time to target | best held-out MLM accuracy | steps run | training s |",
        "|---|---|---|---|---|",
    ]
    for name, progress in runs.items():
        step, seconds, _ = progress.curve[-1]
        reached = (f"{progress.reached[1]:.0f} s = {progress.reached[1] / 60:.1f} min (step {progress.reached[0]})"
                   if progress.reached else f"not reached in {seconds / 60:.1f} min")
        lines.append(f"| {name} | {reached} | {progress.best_within(float('inf'))} | {step} | {seconds:.0f} |")
    if len(runs) == 2:
        ours, peer = runs["ours"], runs["keras-hub"]
        if ours.reached and peer.reached:
            lines.append(f"\nratio keras-hub / ours (time to {args.target:.2f}): "
                         f"{peer.reached[1] / ours.reached[1]:.2f}")
        else:
            # A side that misses the target: the quality each reached in the same training time.
            common = min(p.reached[1] if p.reached else p.curve[-1][1] for p in runs.values())
            lines.append(f"\nbest held-out accuracy within the first {common:.0f} s of training: ours "
                         f"{ours.best_within(common)}, keras-hub {peer.best_within(common)}")
            if ours.reached:
                lines.append(f"ratio keras-hub / ours (time to {args.target:.2f}): > "
                             f"{peer.curve[-1][1] / ours.reached[1]:.2f} (keras-hub did not get there)")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="demo_cpu", help="our recipe: a name under configs/pretrain/ or a YAML")
    parser.add_argument("--target", type=float, default=0.30, help="held-out masked-LM accuracy to reach")
    parser.add_argument("--max_minutes", type=float, default=10.0, help="training-time cap per side")
    parser.add_argument("--sides", default="ours,keras-hub", help="ours, keras-hub or both (comma-separated)")
    parser.add_argument("--eval_every", type=int, default=100, help="steps between held-out evaluations")
    parser.add_argument("--vocab_size", type=int, default=VOCAB_SIZE, help="bert-vocab's target (~4,300 tokens result)")
    parser.add_argument("--dupe_factor", type=int, default=DUPE_FACTOR, help="static maskings of the training chapters")
    parser.add_argument("--seed", type=int, default=RANDOM_SEED,
                        help="the records' --random_seed, and keras-hub's data order and initialisation")
    parser.add_argument("--work_dir", help="where data and models go, kept and reused (default: a temporary "
                        "directory)")
    parser.add_argument("--plot", default="time_to_quality.png", help="the PNG of both curves")
    args = parser.parse_args()
    sides = args.sides.split(",")
    for name in sides:
        if name not in ("ours", "keras-hub"):
            parser.error(f"--sides={args.sides}: {name!r} is not one of ours, keras-hub.")
    if args.eval_every < 1 or args.max_minutes <= 0:
        parser.error("--eval_every must be a positive integer and --max_minutes positive.")
    start_lines = run_header()
    print("\n".join(start_lines), flush=True)
    logging.set_verbosity(logging.WARNING)  # the run's per-loop lines; the bench prints its own

    with tempfile.TemporaryDirectory() as temporary:
        work_dir = os.path.abspath(args.work_dir or temporary)
        os.makedirs(work_dir, exist_ok=True)
        recipe = load_recipe(args.recipe)
        started = time.perf_counter()
        vocab, train_records, heldout_records, chapters = prepare_data(work_dir, recipe, args)
        data_seconds = time.perf_counter() - started
        last = recipe.phases[-1]
        written = read_schema(heldout_records)  # the records' own slots (a recipe that masks afresh has its own)
        lengths = (written.max_seq_length, written.max_predictions_per_seq)
        recipe = recipe.override({
            "vocab_file": vocab, "phases.input_file": [train_records[p.name] for p in recipe.phases],
            "iterations_per_loop": args.eval_every, "save_checkpoints_steps": recipe.num_train_steps})
        config = resolve_bert_config(recipe)
        heldout_batches = list(pretraining_dataset(InputSpec(heldout_records, *lengths, EVAL_BATCH_SIZE,
                                                             is_training=False)))
        runs = {}
        for name in sides:
            if name == "ours":
                model_dir = os.path.join(work_dir, f"ours_{int(time.time())}")
                runs[name] = train_ours(recipe, model_dir, heldout_batches, args)
            else:
                runs[name] = train_keras_hub(config, train_records[last.name], *lengths, vocab, heldout_batches, args)

    for name, progress in runs.items():
        step, seconds, _ = progress.curve[-1]
        write_result("bench_time_to_quality", {
            "side": name, "recipe": recipe.name, "target": args.target, "max_minutes": args.max_minutes,
            "eval_every": args.eval_every, "seconds_to_target": progress.reached and round(progress.reached[1], 1),
            "step_at_target": progress.reached and progress.reached[0], "steps_run": step,
            "training_seconds": round(seconds, 1),
            "curve": [(step, round(s, 1), round(a, 4)) for step, s, a in progress.curve[1:]]})
    lines = report_lines(runs, args, recipe, config, chapters, len(heldout_batches) * EVAL_BATCH_SIZE,
                         lengths[0], data_seconds)
    lines.append(f"curves: {plot(runs, args.target, os.path.abspath(args.plot))}")
    lines.append(f"load average at the end: {load_average()}")
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()

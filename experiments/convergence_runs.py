"""Convergence experiments behind docs/convergence.md: one `bert-pretrain` run per hypothesis (run by hand).

Every run starts from the demo recipe (`configs/pretrain/demo_cpu.yaml`), changes the fields its hypothesis names,
trains through the `bert-pretrain` command a user types, and is scored on the held-out chapters with the original
metrics. The training log (`train_metrics.jsonl`: masked-LM accuracy per loop) gives the curve; the figure puts
each group's curves in one PNG. Each run appends its held-out metrics, time and curve to
`experiments/results/convergence_runs/results.jsonl`.

    .venv/bin/python -m experiments.convergence_runs --data_dir /tmp/bible --runs base,lr_3e-4,seq64 --steps 1500
    .venv/bin/python -m experiments.convergence_runs --data_dir /tmp/bible --list

The data directory is filled on first use by the demo's `DemoData` (Bible chapters, every 10th held out; `bert-vocab`;
`bert-create-pretraining-data` at each length a run needs, dupe_factor 5 for training, 1 held out).
"""

import argparse
import copy
import json
import os

import yaml

from bench.harness import REPO, PretrainFailed, run_pretrain, write_result
from bert_tf.demo_data import MASKED_LM_PROB, DemoData
from experiments import RESULTS

SEQ_LENGTHS = {128: 20, 64: 10, 32: 5}  # records' length -> predictions per sequence
EXTRA_RECORDS = {"64m40": (64, 26, 0.4)}  # name -> (length, predictions, masked_lm_prob)

# The starting point of every run: the demo recipe as it was before this study (one phase of 32 sequences of 128
# tokens, dropout 0.1, the original 100-record shuffle buffer); each run's overrides apply on top of it.
OLD_DEMO = {"train_batch_size": 32, "shuffle_buffer": 100, "learning_rate": 1e-3, "num_warmup_steps": 150,
            "model": {"preset": "tiny", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}}

# name -> (what it tests, recipe overrides; "model" entries go into the recipe's model section, "seq" picks the
# records' sequence length, a list of phases replaces the single phase).
RUNS = {
    "base": ("the old demo recipe: post-LN tiny, lr 1e-3, batch 32, seq 128, dropout 0.1", {}),
    "lr_3e-4": ("lower peak learning rate", {"learning_rate": 3e-4}),
    "lr_3e-3": ("higher peak learning rate", {"learning_rate": 3e-3}),
    "warmup_500": ("longer warmup", {"num_warmup_steps": 500}),
    "batch_64": ("batch 64", {"train_batch_size": 64}),
    "batch_16": ("batch 16", {"train_batch_size": 16}),
    "seq64": ("sequence length 64 (10 predictions)", {"seq": 64}),
    "seq32": ("sequence length 32 (5 predictions)", {"seq": 32}),
    "dropout_0": ("no dropout", {"model": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}}),
    "init_0.05": ("initializer_range 0.05", {"model": {"initializer_range": 0.05}}),
    "init_0.1": ("initializer_range 0.1", {"model": {"initializer_range": 0.1}}),
    "pre_ln": ("pre-LN blocks", {"model": {"pre_layer_norm": True}}),
    "lamb": ("LAMB instead of AdamWeightDecay", {"optimizer": {"name": "lamb"}}),
    "no_nsp": ("masked LM only", {"use_next_sentence": False}),
    "shuffle_20k": ("shuffle buffer of 20,000 records", {"shuffle_buffer": 20000}),
    "sinusoidal": ("sinusoidal positions", {"model": {"position_embedding_type": "sinusoidal"}}),
    "mini": ("mini model (L=4, H=256, A=4)", {"model": {"preset": "mini"}}),
    "heads_4": ("tiny with 4 heads", {"model": {"num_attention_heads": 4}}),
    "seq64_batch128": ("sequence length 64, batch 128", {"seq": 64, "train_batch_size": 128}),
    "lr_3e-4_warmup_500": ("peak rate 3e-4 after 500 warmup steps", {"learning_rate": 3e-4, "num_warmup_steps": 500}),
    "seq32_lamb": ("sequence length 32, LAMB", {"seq": 32, "optimizer": {"name": "lamb"}}),
    "seq32_lamb_5e-3": ("sequence length 32, LAMB at 5e-3", {"seq": 32, "optimizer": {"name": "lamb"},
                                                          "learning_rate": 5e-3}),
    "seq32_batch128_nodrop": ("sequence length 32, batch 128, no dropout",
                              {"seq": 32, "train_batch_size": 128,
                               "model": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}}),
    "seq64_mask40_batch64": ("sequence length 64, 40% masked (26 predictions), batch 64",
                             {"seq": "64m40", "train_batch_size": 64}),
    "seq64_batch64_nodrop": ("sequence length 64, batch 64, no dropout",
                             {"seq": 64, "train_batch_size": 64,
                              "model": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}}),
    "seq32_batch128": ("sequence length 32, batch 128 (dropout 0.1)", {"seq": 32, "train_batch_size": 128}),
    "seq32_batch128_nodrop_shuffle": ("sequence length 32, batch 128, no dropout, shuffle buffer 20,000",
                                      {"seq": 32, "train_batch_size": 128, "shuffle_buffer": 20000,
                                       "model": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}}),
    "seq32_batch128_nodrop_shuffle_dynamic": (
        "as seq32_batch128_nodrop_shuffle, with masks drawn again for every batch",
                                              {"seq": 32, "train_batch_size": 128, "shuffle_buffer": 20000,
                                               "dynamic_masking": {"enabled": True},
                                               "model": {"hidden_dropout_prob": 0.0,
                                                         "attention_probs_dropout_prob": 0.0}}),
    "seq32_then_128": ("80% of steps at 32 tokens x 128 sequences, then 128 x 32, no dropout",
                       {"phases": [{"seq": 32, "batch": 128, "fraction": 0.8}, {"seq": 128, "batch": 32}],
                        "model": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}}),
}


def record_lengths(seq):
    """(max_seq_length, max_predictions_per_seq, masked_lm_prob) of the records a run's "seq" names."""
    return EXTRA_RECORDS.get(seq) or (seq, SEQ_LENGTHS[seq], MASKED_LM_PROB)


def recipe_for(base, overrides, steps, data):
    """The demo recipe with a run's overrides, over `steps` steps, reading the data (a `DemoData`, whose records
    are made on first use) at the run's lengths."""
    recipe = copy.deepcopy(base)
    recipe.update({k: v for k, v in copy.deepcopy(OLD_DEMO).items() if k != "model"})
    recipe["model"] = dict(OLD_DEMO["model"])
    overrides = copy.deepcopy(overrides)
    recipe["name"] = "experiment"
    recipe["model"].update(overrides.pop("model", {}))
    recipe["optimizer"].update(overrides.pop("optimizer", {}))
    phases = overrides.pop("phases", None) or [{"seq": overrides.pop("seq", 128), "fraction": 1.0}]
    recipe.update(overrides)
    recipe["num_train_steps"] = steps
    recipe["save_checkpoints_steps"] = steps
    recipe["phases"] = []
    done = 0
    for index, phase in enumerate(phases):
        seq = phase["seq"]
        length, predictions, masked_lm_prob = record_lengths(seq)
        num_steps = steps - done if index == len(phases) - 1 else int(round(steps * phase["fraction"]))
        done += num_steps
        recipe["phases"].append({"name": f"seq{seq}", "num_steps": num_steps, "max_seq_length": length,
                                 "max_predictions_per_seq": predictions,
                                 "input_file": data.records("train", length, predictions, masked_lm_prob)})
        if "batch" in phase:
            recipe["phases"][-1]["train_batch_size"] = phase["batch"]
    eval_seq = phases[-1]["seq"]
    recipe["eval"]["input_file"] = data.records("heldout", *record_lengths(eval_seq))
    recipe["eval"]["max_eval_steps"] = 1000
    return recipe


def run(name, args, data):
    """Trains and scores one run; its summary (also written to `out_dir/NAME/summary.json`), or None on failure."""
    description, overrides = RUNS[name.split("@")[0]]
    with open(os.path.join(REPO, "configs", "pretrain", f"{args.base}.yaml")) as f:
        base = yaml.safe_load(f)
    run_dir = os.path.join(args.out_dir, name)
    try:
        done = run_pretrain(recipe_for(base, overrides, args.steps, data), run_dir, [f"--vocab_file={data.vocab()}"])
    except PretrainFailed as failure:
        print(f"{name}: {failure}", flush=True)
        return None
    results = done.eval_results
    summary = {"name": name, "description": description, "steps": args.steps, "seconds": round(done.seconds, 1),
               "eval": results, "curve": [(row["step"], row["masked_lm_accuracy"], row["masked_lm_loss"])
                                          for row in done.history]}
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(summary, f)
    write_result("convergence_runs", summary, results=RESULTS)
    print(f"{name}: held-out masked-LM accuracy {results['masked_lm_accuracy']:.4f}, NSP "
          f"{results.get('next_sentence_accuracy', float('nan')):.4f}, {done.seconds:.0f} s ({description})",
          flush=True)
    return summary


def plot(names, args):
    """One PNG with the training masked-LM accuracy curve of each run (held-out accuracy in the legend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5))
    for name in names:
        path = os.path.join(args.out_dir, name, "summary.json")
        if not os.path.exists(path):
            print(f"{name}: no summary.json in {args.out_dir} (run it first); left out of the plot")
            continue
        with open(path) as f:
            summary = json.load(f)
        steps, accuracy, _ = zip(*summary["curve"])
        axis.plot(steps, accuracy, label=f"{name}: held-out {summary['eval']['masked_lm_accuracy']:.3f}")
    axis.set_xlabel("step")
    axis.set_ylabel("training masked-LM accuracy (per 100 steps)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(args.plot, dpi=90)
    print(f"wrote {args.plot}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--out_dir", default="convergence_runs")
    parser.add_argument("--runs", default="base")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--base", default="demo_cpu", help="recipe in configs/pretrain/ whose other fields (optimizer, "
                        "eval, seed, ...) the runs take; OLD_DEMO's fields are set on top")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--plot", help="write a PNG of the curves of --runs (already run) instead of running them")
    args = parser.parse_args()
    if args.list:
        for name, (description, overrides) in RUNS.items():
            print(f"{name:14s} {description}: {overrides}")
        return
    if args.plot:
        return plot(args.runs.split(","), args)
    data = DemoData(args.data_dir, quiet=True)
    for name in args.runs.split(","):
        if name.split("@")[0] not in RUNS:
            parser.error(f"--runs: unknown run {name!r}; --list shows them.")
        run(name, args, data)


if __name__ == "__main__":
    main()

"""The README's quick start (split, vocab, records, `bert-pretrain --config=small_fast`, `bert-evaluate`) on a
corpus, with a variant of the recipe: the measurements behind docs/convergence.md, "small_fast on other text".

    .venv/bin/python -m experiments.corpora --out /tmp/corpora
    .venv/bin/python -m experiments.quick_start_corpora --corpus /tmp/corpora/python_docs.txt --steps 1500
    .venv/bin/python -m experiments.quick_start_corpora --corpus /tmp/corpora/python_docs.txt --steps 1500 \\
        --variant warmup_200 --stop_at 750   # a diagnostic: the first 750 steps only
    .venv/bin/python -m experiments.quick_start_corpora --corpus /tmp/corpora/python_docs.txt --steps 3000 \
        --extend_from python_docs-small_fast-1500  # "more steps" on a finished run's model directory

Each run appends to `experiments/results/quick_start_corpora/<corpus>.jsonl` as it goes: one row per training loop (the
training curve, as `train_metrics.jsonl` logs it), then one row with `bert-evaluate`'s held-out results and the
baselines beside them. The data (split, vocab, records) is made once per corpus under --work and reused.
`--code DIR` runs the commands from another checkout of the package (`git archive HEAD | tar -x -C DIR`), e.g. to
keep measuring while the working tree changes.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import yaml

from experiments import RESULTS as EXPERIMENT_RESULTS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(EXPERIMENT_RESULTS, "quick_start_corpora")
SMALL_FAST = os.path.join(REPO, "configs", "pretrain", "small_fast.yaml")

# small_fast as it was when the levers were measured: every lever below is a change from the recipe of its time, so
# each reruns as measured whatever small_fast is now. STATIC_15: the records' own 15% masks (small_fast before
# "Masking more", 2026-11-28 12:00); BEFORE: also the next-sentence loss and a 500-step warmup (before 09:30; raw rows
# of that time name it `small_fast`).
STATIC_15 = {"dynamic_masking.enabled": False, "phases.0.max_predictions_per_seq": 5,
             "phases.1.max_predictions_per_seq": 20}
BEFORE = {"num_warmup_steps": 500, "use_next_sentence": True, **STATIC_15}


def masked(rate, slots_32, slots_128):
    """Masks drawn for every batch at `rate` of the tokens, with prediction slots for 32 and 128 tokens."""
    return {"dynamic_masking.enabled": True, "dynamic_masking.masked_lm_prob": rate,
            "phases.0.max_predictions_per_seq": slots_32, "phases.1.max_predictions_per_seq": slots_128}


WIDE = {"model.hidden_size": 256, "model.num_attention_heads": 4, "model.intermediate_size": 1024}
# name -> recipe fields set on configs/pretrain/small_fast.yaml (dotted paths; "phases.N.field" a phase's). Only the
# rows measured in docs/convergence.md, "Other text", are kept.
VARIANTS = {
    "small_fast": {},
    "small_fast_before": BEFORE,
    "warmup_200": {**BEFORE, "num_warmup_steps": 200},
    "warmup_100": {**BEFORE, "num_warmup_steps": 100},
    "lr_7e-4": {**BEFORE, "learning_rate": 7e-4},
    "warmup_200_lr_2e-3": {**BEFORE, "num_warmup_steps": 200, "learning_rate": 2e-3},
    "heads_4": {**BEFORE, "model.num_attention_heads": 4},
    "no_nsp": {**BEFORE, "use_next_sentence": False},
    "seq16_batch256": {**BEFORE, "phases.0.max_seq_length": 16, "phases.0.max_predictions_per_seq": 3,
                       "phases.0.train_batch_size": 256},
    "no_nsp_warmup_200": {**BEFORE, "use_next_sentence": False, "num_warmup_steps": 200},  # = static_15
    "static_15": STATIC_15,
    "seed_2": {**STATIC_15, "seed": 2},
    "lr_1.5e-3": {**STATIC_15, "learning_rate": 1.5e-3},
    "lr_2e-3": {**STATIC_15, "learning_rate": 2e-3},
    "split_1000_500": {**STATIC_15, "phases.1.min_num_steps": 500},
    "dynamic": masked(0.15, 5, 20),
    "dynamic_mask_20": masked(0.2, 7, 26),
    "dynamic_mask_30": masked(0.3, 10, 40),  # small_fast now
    "dynamic_mask_40": masked(0.4, 13, 52),
    "dynamic_mask_30_seed_2": {**masked(0.3, 10, 40), "seed": 2},
    "dynamic_mask_30_split_1000_500": {**masked(0.3, 10, 40), "phases.1.min_num_steps": 500},
    "dynamic_mask_30_lr_1.5e-3": {**masked(0.3, 10, 40), "learning_rate": 1.5e-3},
    "dynamic_mask_30_seq64_batch64": {**masked(0.3, 19, 40), "phases.0.max_seq_length": 64,
                                      "phases.0.train_batch_size": 64},
    "dynamic_mask_30_split_500_1000": {**masked(0.3, 10, 40), "num_train_steps": 1500, "phases.0.num_steps": 500,
                                       "phases.1.num_steps": 1000},
    # Speed only (run with --stop_at): XLA on the CPU, a model twice as wide.
    "jit": {**STATIC_15, "jit_compile": True},
    "wide": WIDE,
    "wide_jit": {**WIDE, "jit_compile": True},
}


MODULES = {"bert-vocab": "vocab", "bert-create-pretraining-data": "create_pretraining_data",
           "bert-pretrain": "pretrain", "bert-evaluate": "evaluate"}
CODE = None  # --code: the checkout the commands run from (None: the installed package)


def command_line(name, *flags):
    """A quick start command as the console script runs it: its module, with the chosen checkout first on the path."""
    return [sys.executable, "-m", f"bert_tf.cli.{MODULES[name]}", *flags]


def environment():
    """The commands' environment: with --code, its checkout on the path (and their working directory, since
    `python -m` puts that first)."""
    return {**os.environ, "PYTHONPATH": CODE} if CODE else None


def run(command, log):
    """Runs one of the quick start's commands, its output appended to `log`."""
    with open(log, "a") as f:
        f.write(f"$ {' '.join(command)}\n")
        f.flush()
        subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, check=True, env=environment(), cwd=CODE)


def prepare(corpus, work, vocab_size, whole_word):
    """The quick start's steps 1-3 (its awk split, bert-vocab, bert-create-pretraining-data), once per corpus."""
    data = os.path.join(work, "data")
    done = os.path.join(data, "DONE")
    if os.path.exists(done):
        return data
    os.makedirs(data, exist_ok=True)
    log = os.path.join(work, "prepare.log")
    subprocess.run(["awk", "-v", "RS=", "-v", f"train={data}/train.txt", "-v", f"heldout={data}/heldout.txt",
                    '{ out = (NR % 10 == 0 ? heldout : train); print (seen[out]++ ? "\\n" : "") $0 > out }', corpus],
                   check=True)
    run(command_line("bert-vocab", f"--input_file={data}/train.txt", f"--vocab_size={vocab_size}",
         f"--output_file={data}/vocab.txt"), log)
    records = [("train", 32, 5, 5), ("train", 128, 20, 5), ("heldout", 128, 20, 1), ("heldout", 32, 5, 1)]
    for split, seq, pred, dupe in records:
        run(command_line("bert-create-pretraining-data", f"--input_file={data}/{split}.txt",
             f"--vocab_file={data}/vocab.txt", f"--output_file={data}/{split}-seq{seq}.tfrecord",
             f"--max_seq_length={seq}", f"--max_predictions_per_seq={pred}", f"--dupe_factor={dupe}",
             f"--do_whole_word_mask={str(whole_word).lower()}"), log)
    open(done, "w").close()
    return data


def short_records(data, seq, pred, log):
    """Training records of the first phase at another length than 32 (made once)."""
    path = f"{data}/train-seq{seq}.tfrecord"
    if not os.path.exists(path):
        run(command_line("bert-create-pretraining-data", f"--input_file={data}/train.txt",
                         f"--vocab_file={data}/vocab.txt", f"--output_file={path}", f"--max_seq_length={seq}",
                         f"--max_predictions_per_seq={pred}", "--dupe_factor=5"), log)
    return path


def variant_recipe(name, path):
    """small_fast.yaml with the variant's fields set, written to `path`."""
    with open(SMALL_FAST) as f:
        recipe = yaml.safe_load(f)
    for dotted, value in VARIANTS[name].items():
        node, keys = recipe, dotted.split(".")
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        node[keys[-1]] = value
    recipe["iterations_per_loop"] = 100  # a finer curve
    recipe["save_checkpoints_steps"] = 250
    with open(path, "w") as f:
        yaml.safe_dump(recipe, f, sort_keys=False)
    return path


def append(path, row):
    with open(path, "a") as f:
        f.write(json.dumps({**row, "source": "measured"}) + "\n")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--work", default="/tmp/quick_start_corpora")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--variant", default="small_fast", choices=sorted(VARIANTS))
    parser.add_argument("--stop_at", type=int, help="Stop the run (SIGTERM, a checkpoint) at this step.")
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--whole_word", action="store_true", help="Records with --do_whole_word_mask.")
    parser.add_argument("--code", help="A checkout of the package to run the commands from.")
    parser.add_argument("--extend_from", help="A finished run's id: its model directory, copied, is run again with "
                        "--num_train_steps=--steps (what a user does to give a run more steps).")
    args = parser.parse_args(argv)
    global CODE
    CODE = args.code and os.path.abspath(args.code)

    corpus_name = os.path.splitext(os.path.basename(args.corpus))[0]
    data_name = corpus_name + (f"-v{args.vocab_size}" if args.vocab_size != 8000 else "") + \
        ("-wwm" if args.whole_word else "")
    data = prepare(args.corpus, os.path.join(args.work, data_name), args.vocab_size, args.whole_word)
    run_id = f"{data_name}-{args.variant}-{args.steps}" + (f"-stop{args.stop_at}" if args.stop_at else "") + \
        (f"-from-{args.extend_from}" if args.extend_from else "")
    model_dir = os.path.join(args.work, "runs", run_id)
    shutil.rmtree(model_dir, ignore_errors=True)
    os.makedirs(model_dir)
    if args.extend_from:
        shutil.copytree(os.path.join(args.work, "runs", args.extend_from, "model"), os.path.join(model_dir, "model"))
    os.makedirs(RESULTS, exist_ok=True)
    results = os.path.join(RESULTS, f"{corpus_name}.jsonl")
    overrides = VARIANTS[args.variant]
    first = short_records(data, overrides["phases.0.max_seq_length"], overrides["phases.0.max_predictions_per_seq"],
                          os.path.join(args.work, data_name, "prepare.log")) \
        if "phases.0.max_seq_length" in overrides else f"{data}/train-seq32.tfrecord"
    recipe = variant_recipe(args.variant, os.path.join(args.work, "runs", run_id + ".yaml"))
    command = command_line("bert-pretrain", f"--config={recipe}", f"--num_train_steps={args.steps}",
                           f"--model_dir={model_dir}/model", f"--vocab_file={data}/vocab.txt",
                           f"--input_file={first}", f"--input_file={data}/train-seq128.tfrecord",
                           f"--eval_input_file={data}/heldout-seq128.tfrecord")
    header = {"run_id": run_id, "corpus": corpus_name, "variant": args.variant, "overrides": VARIANTS[args.variant],
              "extend_from": args.extend_from,
              "steps": args.steps, "stop_at": args.stop_at, "vocab_size": args.vocab_size,
              "whole_word": args.whole_word, "command": " ".join(command)}
    started = time.time()
    log = os.path.join(model_dir, "pretrain.log")
    history = os.path.join(model_dir, "model", "train_metrics.jsonl")
    seen = len(open(history).read().splitlines()) if os.path.exists(history) else 0  # an extended run's old rows

    def record_curve(seen):
        """Appends the history rows after the first `seen` as curve lines; returns them."""
        rows = [json.loads(line) for line in open(history).read().splitlines()] if os.path.exists(history) else []
        for row in rows[seen:]:
            append(results, {**header, "kind": "curve", "step": row["step"], "phase": row.get("phase"),
                             "masked_lm_accuracy": row.get("masked_lm_accuracy"),
                             "steps_per_second": row.get("steps_per_second")})
        return rows[seen:]

    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment(), cwd=CODE)
        while process.poll() is None:
            time.sleep(10)
            new = record_curve(seen)
            seen += len(new)
            if args.stop_at and new and new[-1]["step"] >= args.stop_at and process.poll() is None:
                process.send_signal(signal.SIGTERM)
    record_curve(seen)
    for seq in (128, 32):
        output = os.path.join(model_dir, f"eval-seq{seq}.json")
        run(command_line("bert-evaluate", f"--model_dir={model_dir}/model",
                         f"--eval_input_file={data}/heldout-seq{seq}.tfrecord",
                         f"--baseline_input_file={data}/train-seq{seq}.tfrecord", f"--output_file={output}"),
            os.path.join(model_dir, f"evaluate-seq{seq}.log"))
        with open(output) as f:
            evaluation = json.load(f)
        append(results, {**header, "kind": "eval", "seq": seq, "seconds": round(time.time() - started),
                         "pretrain_exit": process.returncode,
                         **{k: v for k, v in evaluation.items() if not isinstance(v, (dict, list))}})
    print(f"{run_id}: exit {process.returncode}, {time.time() - started:.0f} s -> {results}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""What the benchmarks share: two runners timed in alternation, one `bert-pretrain` run of a recipe, the result
lines every measurement appends under `bench/results/<script>/`, and the fields of a training step's row on an
accelerator (`step_row`), which Hugging Face's step (`bench_hf_bert.py`) and ours (tools/xla/) both write, so that
their rows read side by side.

The module itself needs only the standard library (a script with jax or torch and no TensorFlow writes its results
through it too); `run_pretrain` reads the run's files with the package.

Example:
>>> fast = Runner(lambda steps: time.sleep(0.001 * steps) or 0.0, work_per_cycle=32)
>>> slow = Runner(lambda steps: time.sleep(0.002 * steps) or 0.0, work_per_cycle=32)
>>> timing = time_pair(fast, slow, seconds=0.05, warmup=1, repeats=3)
>>> 1.5 < timing.ratio < 2.5  # sequences/s of the first over the second (2 on an idle machine), median of three
True
"""

import dataclasses
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

from bench.run_header import command_line, cpu_name, load_average

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where result lines go; BENCH_RESULTS moves them (a smoke run's lines are not results).
RESULTS = os.environ.get("BENCH_RESULTS") or os.path.join(REPO, "bench", "results")
# MFU of a step row is a fraction of this: the dense bf16 peak of an H100 SXM5 and of an H200 (their data sheets
# agree), so rows from either card read on one scale.
DENSE_BF16_PEAK_TFLOPS = 989.4
STEP_FIELDS = ("stack", "variant", "device", "preset", "seq", "batch", "micro_batch", "sequences_per_s", "mfu",
               "run_id")


def new_run_id():
    """A run's id: its UTC start time, e.g. "20261128T081500Z"; every row of one run carries the same one."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


# One id for every line this process writes, so the lines of one run can be told from another's.
RUN_ID = new_run_id()


@dataclasses.dataclass(frozen=True)
class Runner:
    """One side of a timed pair: `run(steps)` runs that many steps and returns the last loss (checked finite);
    `work_per_cycle` is what `cycle` steps process (sequences, non-padding tokens, ...), so a runner that cycles
    through held batches of different sizes is timed over whole cycles and its rate is exact.

    Example:
    >>> Runner(lambda steps: trainer.train(iterator, steps).means["loss"], work_per_cycle=32)  # doctest: +SKIP
    """

    run: object
    work_per_cycle: float
    cycle: int = 1


@dataclasses.dataclass(frozen=True)
class PairTiming:
    """`rates`: the median work per second of each runner; `ratio`: the median over repeats of first / second;
    `steps`: the steps of each runner's timed repeats."""

    rates: tuple
    ratio: float
    steps: tuple


def time_pair(first, second, seconds, warmup, repeats, clock=time.perf_counter):
    """Times two `Runner`s: after `warmup` untimed steps (at least one cycle) each, `repeats` repeats of about
    `seconds` per runner, in alternating order (AB BA AB ...), so that a slow spell of a shared machine hits both
    alike; the ratio of each repeat's pair is robust to such spells. Exits on a non-finite loss. `clock` reads the
    time in seconds."""
    runners = (first, second)
    steps = []
    for runner in runners:
        runner.run(max(warmup, runner.cycle))
        started = clock()
        runner.run(runner.cycle)
        cycle_seconds = clock() - started
        steps.append(max(1, round(seconds / max(cycle_seconds, 1e-9))) * runner.cycle)
    rates = ([], [])
    for repeat in range(repeats):
        for index in ((0, 1) if repeat % 2 == 0 else (1, 0)):
            runner = runners[index]
            started = clock()
            loss = runner.run(steps[index])
            rates[index].append(runner.work_per_cycle * steps[index] / runner.cycle / (clock() - started))
            if not math.isfinite(loss):
                sys.exit(f"Non-finite loss {loss}: the benchmark's model diverged; lower its learning rate.")
    ratios = [a / b for a, b in zip(*rates)]
    return PairTiming(rates=tuple(statistics.median(r) for r in rates), ratio=statistics.median(ratios),
                      steps=tuple(steps))


@dataclasses.dataclass(frozen=True)
class PretrainRun:
    """One finished `bert-pretrain` run: its model directory, wall seconds, training log rows (`step`,
    `masked_lm_accuracy`, `masked_lm_loss`, ...) and final held-out metrics (empty without eval records)."""

    model_dir: str
    seconds: float
    history: list
    eval_results: dict


class PretrainFailed(RuntimeError):
    """`bert-pretrain` exited with an error; the message ends with its output's last lines."""


def run_pretrain(recipe, run_dir, flags=()):
    """Runs the `bert-pretrain` command a user types on `recipe` (a recipe dict, written to `run_dir/recipe.yaml`)
    with extra `flags`, into a fresh `run_dir/model` (an old one is removed: the command would resume it); its
    output goes to `run_dir/log.txt`. Returns a `PretrainRun`; raises `PretrainFailed` when the command fails.

    Example:
    >>> run = run_pretrain(recipe, "/tmp/runs/base", ["--vocab_file=/tmp/bible/vocab.txt"])  # doctest: +SKIP
    >>> run.history[-1]["step"], run.eval_results["masked_lm_accuracy"]  # doctest: +SKIP
    (1500, 0.2531)
    """
    from bert_tf.training.training_log import HISTORY_FILE, read_eval_results, read_history

    os.makedirs(run_dir, exist_ok=True)
    recipe_file, model_dir = os.path.join(run_dir, "recipe.yaml"), os.path.join(run_dir, "model")
    with open(recipe_file, "w", encoding="utf-8") as f:
        json.dump(recipe, f, indent=1)  # JSON is YAML: the recipe loader reads it
    shutil.rmtree(model_dir, ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bert_tf.cli.pretrain", f"--config={recipe_file}",
                           f"--model_dir={model_dir}", *flags], cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - started
    with open(os.path.join(run_dir, "log.txt"), "w", encoding="utf-8") as f:
        f.write(done.stdout)
    if done.returncode:
        raise PretrainFailed(f"bert-pretrain exited with {done.returncode} on {recipe_file} (its output is in "
                             f"{run_dir}/log.txt):\n{done.stdout[-3000:]}")
    eval_file = os.path.join(model_dir, "eval_results.txt")
    return PretrainRun(model_dir=model_dir, seconds=seconds,
                       history=read_history(os.path.join(model_dir, HISTORY_FILE)),
                       eval_results=read_eval_results(model_dir) if os.path.exists(eval_file) else {})


def machine():
    """The machine a result was measured on, as every result line records it: CPU, cores and load average."""
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "load_average": load_average()}


def write_result(script, row, file_name="results.jsonl", results=RESULTS):
    """Appends `row` (a dict) as one JSON line to `results/<script>/<file_name>` (`append_row`: with this process's
    `run_id`, the command, `source: measured` and the `machine()`). Returns the file's path.

    Example:
    >>> write_result("bench_train_step", {"preset": "tiny", "seq": 128, "ratio": 1.07})  # doctest: +SKIP
    '.../bench/results/bench_train_step/results.jsonl'
    """
    directory = os.path.join(results, script)
    append_row(directory, row, file_name)
    return os.path.join(directory, file_name)


def append_row(directory, row, file_name="results.jsonl"):
    """Appends `row` to `directory`/`file_name` (made if missing) as one JSON line with what every result line
    records (this process's `run_id` unless the row has its own, the command, `source: measured`, what
    tools/render_measurements.py asks of a row, and the `machine()`), and flushes it to disk, so a run cut short
    keeps every line it wrote. Returns the line.
    """
    os.makedirs(directory, exist_ok=True)
    line = {"run_id": RUN_ID, "command": command_line(), "source": "measured", "machine": machine(), **row}
    with open(os.path.join(directory, file_name), "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return line


def step_row(stack, variant, device, preset, seq, batch, micro_batch, sequences_per_s, flops_per_sequence,
             run_id):
    """A training step's row on an accelerator, its required fields (`STEP_FIELDS`); `mfu` from the model FLOPs per
    sequence (the package's count) against `DENSE_BF16_PEAK_TFLOPS`.

    >>> step_row("bert_tf", "einsum", "cpu", "tiny", 16, 8, 8, 100.0, 1e9, "r")["mfu"]
    0.0001
    """
    mfu = sequences_per_s * flops_per_sequence / (DENSE_BF16_PEAK_TFLOPS * 1e12)
    return {"stack": stack, "variant": variant, "device": device, "preset": preset, "seq": seq, "batch": batch,
            "micro_batch": micro_batch, "sequences_per_s": round(sequences_per_s, 3), "mfu": round(mfu, 4),
            "run_id": run_id}


def step_variant(manifest):
    """The `variant` of an exported step (tools/xla/export_xla_step.py's manifest): its attention ("einsum",
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

"""bench/harness.py, what the benchmarks share: two runners timed in alternation (rates, ratio, order, whole
cycles), a result line per measurement, and one real `bert-pretrain` run of a recipe read back."""

import doctest
import json
import math
import os

import pytest

from bench import harness
from pretraining_records import write_records, write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


class SimulatedClock:
    """The time as the runners spend it, so that the timings are exact."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class StepRunner:
    """A runner whose steps take `step_seconds` each of the clock's time; it notes every call's steps under its
    name in `calls` (shared by both runners), and call number `slow_call` of that list takes `slowdown` times as
    long, as in a busy spell of a shared machine."""

    def __init__(self, name, step_seconds, clock, calls, loss=0.5, slow_call=None, slowdown=1.0):
        self.name, self.step_seconds, self.clock, self.calls, self.loss = name, step_seconds, clock, calls, loss
        self.slow_call, self.slowdown, self.slowed = slow_call, slowdown, False

    def __call__(self, steps):
        self.calls.append((self.name, steps))
        slowed = len(self.calls) - 1 == self.slow_call
        self.clock.now += self.step_seconds * steps * (self.slowdown if slowed else 1.0)
        self.slowed = self.slowed or slowed
        return self.loss


def test_time_pair_rates_ratio_and_steps_of_a_runner_twice_as_fast():
    clock, calls = SimulatedClock(), []
    fast = harness.Runner(StepRunner("fast", 0.002, clock, calls), work_per_cycle=32)
    slow = harness.Runner(StepRunner("slow", 0.004, clock, calls), work_per_cycle=32)
    timing = harness.time_pair(fast, slow, seconds=0.04, warmup=2, repeats=3, clock=clock)
    assert timing.rates == pytest.approx((16_000, 8_000)) and timing.ratio == pytest.approx(2.0)
    assert timing.steps == (20, 10)  # about 0.04 s of steps each


def test_time_pair_alternates_the_order_and_times_whole_cycles():
    clock, calls = SimulatedClock(), []
    first = harness.Runner(StepRunner("a", 0.001, clock, calls), work_per_cycle=300, cycle=3)
    second = harness.Runner(StepRunner("b", 0.002, clock, calls), work_per_cycle=100)
    timing = harness.time_pair(first, second, seconds=0.0125, warmup=1, repeats=3, clock=clock)
    # Warm-up (at least one cycle) and one timed cycle each, then the repeats in the order AB BA AB.
    assert calls[:4] == [("a", 3), ("a", 3), ("b", 1), ("b", 1)]
    assert calls[4:] == [("a", 12), ("b", 6), ("b", 6), ("a", 12), ("a", 12), ("b", 6)]
    assert timing.steps == (12, 6) and timing.rates == pytest.approx((100_000, 50_000))


def test_the_ratio_is_the_median_of_the_repeats_so_one_slow_spell_does_not_move_it():
    clock, calls = SimulatedClock(), []
    # The first timed repeat of the first runner (call 4, after two warm-up and two timed cycles) runs 5 times
    # slower: its ratio is 0.2, the other two are 1.
    slowed = StepRunner("a", 0.001, clock, calls, slow_call=4, slowdown=5.0)
    first = harness.Runner(slowed, work_per_cycle=10)
    second = harness.Runner(StepRunner("b", 0.001, clock, calls), work_per_cycle=10)
    timing = harness.time_pair(first, second, seconds=0.01, warmup=1, repeats=3, clock=clock)
    assert slowed.slowed and calls[4] == ("a", 10)
    assert timing.ratio == pytest.approx(1.0) and timing.rates == pytest.approx((10_000, 10_000))


def test_time_pair_stops_on_a_non_finite_loss():
    clock, calls = SimulatedClock(), []
    good = harness.Runner(StepRunner("good", 0.001, clock, calls), work_per_cycle=1)
    diverged = harness.Runner(StepRunner("nan", 0.001, clock, calls, loss=math.nan), work_per_cycle=1)
    with pytest.raises(SystemExit, match="Non-finite loss nan: the benchmark's model diverged"):
        harness.time_pair(good, diverged, seconds=0.001, warmup=1, repeats=2, clock=clock)


def test_result_lines_append_with_the_run_id_and_the_machine(tmp_path):
    path = harness.write_result("bench_example", {"preset": "tiny", "ratio": 1.07}, results=str(tmp_path))
    assert harness.write_result("bench_example", {"preset": "mini", "ratio": 0.98}, results=str(tmp_path)) == path
    assert path == str(tmp_path / "bench_example" / "results.jsonl")
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert [(line["preset"], line["ratio"]) for line in lines] == [("tiny", 1.07), ("mini", 0.98)]
    assert {line["run_id"] for line in lines} == {harness.RUN_ID} and len(harness.RUN_ID) == len("20261128T081500Z")
    assert lines[0]["machine"]["cores"] == os.cpu_count() and lines[0]["machine"]["cpu"]
    assert {line["source"] for line in lines} == {"measured"} and all(line["command"] for line in lines)


def test_module_example_runs():
    assert doctest.testmod(harness, optionflags=doctest.ELLIPSIS).failed == 0


def test_run_pretrain_trains_a_recipe_and_reads_its_history(tmp_path):
    seq, pred = 16, 4
    records = write_records(tmp_path / "train.tfrecord", 32, seq, pred)
    recipe = {"name": "harness_test", "train_batch_size": 4, "num_train_steps": 6, "num_warmup_steps": 1,
              "save_checkpoints_steps": 6, "iterations_per_loop": 3,
              "model": {"preset": "tiny", "hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2,
                        "num_hidden_layers": 1, "max_position_embeddings": seq},
              "phases": [{"name": "p", "num_steps": 6, "max_seq_length": seq, "max_predictions_per_seq": pred}]}
    flags = [f"--input_file={records}", f"--eval_input_file={records}",
             f"--vocab_file={write_vocab(tmp_path / 'vocab.txt')}", "--peak_tflops=1"]
    run = harness.run_pretrain(recipe, str(tmp_path / "run"), flags)
    assert [row["step"] for row in run.history] == [3, 6]
    assert all(row["masked_lm_loss"] > 0 for row in run.history)
    assert run.eval_results["global_step"] == 6 and 0.0 <= run.eval_results["masked_lm_accuracy"] <= 1.0
    assert run.model_dir == str(tmp_path / "run" / "model") and run.seconds > 0

    recipe["num_train_steps"] = -1
    with pytest.raises(harness.PretrainFailed, match=r"bert-pretrain exited with 2 on .*recipe\.yaml"):
        harness.run_pretrain(recipe, str(tmp_path / "bad"), flags)

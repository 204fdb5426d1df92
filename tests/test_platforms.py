"""`bert-pretrain --platform`: settings that fit each accelerator, planned from the raw rows of the compilers'
buffer sizes by `bert_tf.platforms` (the one micro-batch rule, the one depth extrapolation), written into
configs/platforms.yaml by tools/xla/plan_platforms.py, and leaving the paper's recipe (global batch, schedule,
phases) as it is."""

import ast
import dataclasses
import glob
import os
import subprocess
import sys

import pytest
import yaml

from bert_tf.accelerators.device_peaks import DEVICES
from bert_tf.platforms.compiled_plan import cpu_step_bytes, plan_tpu
from bert_tf.platforms.compiler_rows import read_rows
from bert_tf.platforms.micro_batch import GIB, fits, largest_fitting_micro_batch
from bert_tf.platforms.platforms_file import PLATFORMS_FILE, PlatformsError, load_platforms, platform_names
from bert_tf.platforms.platforms_yaml import render_platforms_file
from bert_tf.training.platforms import apply_platform
from bert_tf.training.recipe import RecipeError, load_recipe
from helpers import REPO

with open(PLATFORMS_FILE, encoding="utf-8") as f:
    PLATFORMS_TEXT = f.read()
PLATFORMS_YAML = yaml.safe_load(PLATFORMS_TEXT)
ESTIMATES = PLATFORMS_YAML["estimates"]
XLA_GPU_ESTIMATES = PLATFORMS_YAML["xla_gpu_estimates"]
XLA_TPU_ESTIMATES = PLATFORMS_YAML["xla_tpu_estimates"]
RESULTS = os.path.join(REPO, "tools", "xla", "results", "plan_platforms")
ROWS = {name: read_rows(os.path.join(RESULTS, f"{name}.jsonl")) for name in ("xla_cpu", "xla_gpu", "xla_tpu")}
PLATFORMS = load_platforms()
CPU_ESTIMATED = [n for n in sorted(PLATFORMS) if PLATFORMS[n].device
                 and PLATFORMS[n].memory_source.startswith("XLA:CPU estimate")]
GPU_ESTIMATED = sorted(XLA_GPU_ESTIMATES)
ASKED = ("tpu_v4", "tpu_v5e", "a100_80gb", "a100_40gb", "h100_80gb", "cpu")


def test_the_platforms_file_is_what_the_tool_writes_from_the_raw_rows():
    """Every figure and micro-batch of configs/platforms.yaml is planned from the rows under
    tools/xla/results/plan_platforms/: a row added, or a figure edited by hand, makes the file stale until
    `tools/xla/plan_platforms.py write` writes it again."""
    assert render_platforms_file(PLATFORMS_TEXT, ROWS) == PLATFORMS_TEXT, (
        "configs/platforms.yaml is stale: run .venv/bin/python tools/xla/plan_platforms.py write")
    edited = PLATFORMS_TEXT.replace("fixed_gib: 7.02,", "fixed_gib: 7.5,")
    assert edited != PLATFORMS_TEXT and render_platforms_file(edited, ROWS) == PLATFORMS_TEXT
    fewer = {**ROWS, "xla_gpu": [row for row in ROWS["xla_gpu"] if row["name"] != "base_512_mb64"]}
    assert render_platforms_file(PLATFORMS_TEXT, fewer) != PLATFORMS_TEXT
    # The TPU chips borrow each other's shallow compiles, so one margin plans them all (the first entry is tpu_v4).
    one_apart = PLATFORMS_TEXT.replace("memory_margin: 0.2", "memory_margin: 0.25", 1)
    with pytest.raises(ValueError, match=r"the TPU entries' memory_margin differ \(\[0.2, 0.25\]\): give them one"):
        render_platforms_file(one_apart, ROWS)


def test_every_row_names_its_command_and_whether_it_was_measured_or_transcribed():
    """The TPU and XLA:CPU rows were compiled and kept as the tool printed them; the XLA:GPU figures were recorded
    before rows existed (and need the CUDA plugin's venv), so their rows are transcribed from the measurements."""
    assert {row["source"] for row in ROWS["xla_tpu"] + ROWS["xla_cpu"]} == {"measured"}
    assert {row["source"] for row in ROWS["xla_gpu"]} == {"transcribed"}
    assert all(row["command"].split()[-1] for rows in ROWS.values() for row in rows)


def test_the_help_lists_every_platform_of_the_file():
    assert platform_names() == list(PLATFORMS) and len(PLATFORMS) == 8


def test_the_platforms_the_issue_names_exist():
    assert set(ASKED) <= set(PLATFORMS)


@pytest.mark.parametrize("name", CPU_ESTIMATED)
def test_each_micro_batch_is_the_largest_power_of_two_that_fits_the_device_at_its_phase_length(name):
    platform = PLATFORMS[name]
    device = DEVICES[platform.device].memory_gib * GIB
    assert platform.mixed_precision == "mixed_bfloat16"
    for preset in ("base", "large"):
        assert set(platform.models[preset].max_micro_batch_size) == set(ESTIMATES[preset]) == {128, 512}
        for seq_length, figures in ESTIMATES[preset].items():
            micro = platform.max_micro_batch_size(preset, seq_length)
            where = (preset, seq_length, micro)
            assert micro & (micro - 1) == 0, where  # divides every power-of-two replica batch
            assert fits(cpu_step_bytes(figures, micro), device, platform.memory_margin), where
            assert micro == 256 or not fits(cpu_step_bytes(figures, 2 * micro), device, platform.memory_margin), where


@pytest.mark.parametrize("name", GPU_ESTIMATED)
def test_a_gpu_estimated_platforms_micro_batches_are_the_largest_powers_of_two_xla_gpu_fits_under_its_margin(name):
    """An entry whose figures are XLA:GPU's own buffers (tools/xla/plan_platforms.py, ahead of time for the GPU's
    target) takes at each length the largest power of two up to 256 whose step's peak (arguments, temporaries,
    outputs that do not reuse an argument) stays under (1 - memory_margin) of the target's memory without the
    rematerialization XLA:GPU does to squeeze a step onto the card (compiled for twice its memory); between and above
    the compiled micro-batches the peak is the line through the two nearest."""
    platform, figures = PLATFORMS[name], XLA_GPU_ESTIMATES[name]
    assert platform.memory_source.startswith("XLA:GPU estimate, jaxlib ")
    assert platform.jit_compile and platform.jit_compile_scope == "step"  # the program that was compiled
    device = figures["device_gib"] * GIB
    budget_gib = (1 - platform.memory_margin) * figures["device_gib"]
    assert device <= DEVICES[platform.device].memory_gib * GIB  # what CUDA reports, not the data sheet's
    for preset in ("base", "large"):
        assert set(platform.models[preset].max_micro_batch_size) == set(figures[preset]) == {128, 512}
        for seq_length, steps in figures[preset].items():
            where = (preset, seq_length)
            micro = platform.max_micro_batch_size(preset, seq_length)
            assert steps[micro]["no_remat_peak_gib"] <= budget_gib, where  # the chosen one was compiled both ways
            assert steps[micro]["peak_gib"] <= steps[micro]["no_remat_peak_gib"] + 0.01, where
            points = [(m, step["no_remat_peak_gib"] * GIB) for m, step in steps.items() if "no_remat_peak_gib" in step]
            assert micro == largest_fitting_micro_batch(points, device, platform.memory_margin), where
            for step in steps.values():  # the peak is the sum of XLA's buffers
                assert step["peak_gib"] == pytest.approx(step["arguments_gib"] + step["temporaries_gib"], abs=0.02)
    if name == "h100_80gb":  # the set of exported steps a GPU runs is at this entry's micro-batches
        assert step_set_micro_batches() == {(preset, seq): platform.max_micro_batch_size(preset, seq)
                                            for preset in ("base", "large") for seq in (128, 512)}


def step_set_micro_batches():
    """`H100_MICRO_BATCH` of the XLA tools' step set, read from its source (a script for jax's Python, not a module
    of the package)."""
    path, = [p for p in glob.glob(os.path.join(REPO, "*", "**", "xla_step_set.py"), recursive=True)
             if ".venv" not in p]
    tree = ast.parse(open(path, encoding="utf-8").read())
    value, = [node.value for node in tree.body if isinstance(node, ast.Assign)
              and getattr(node.targets[0], "id", None) == "H100_MICRO_BATCH"]
    return ast.literal_eval(value)


@pytest.mark.parametrize("name", ["tpu_v4", "a100_40gb", "cpu"])
def test_a_platform_changes_only_how_a_step_is_computed(name):
    for recipe_name in ("bert_base_paper", "bert_large_paper"):
        paper = load_recipe(recipe_name)
        fitted = apply_platform(paper, name)
        changed = {k for k, v in fitted.to_dict().items() if paper.to_dict()[k] != v}
        # How a step is computed (precision, micro-batches, XLA scope), the eval batch, and which platform it was.
        assert changed <= {"mixed_precision", "phases", "eval", "jit_compile", "jit_compile_scope", "platform"}
        assert fitted.platform == name
        assert dataclasses.replace(fitted.eval, eval_batch_size=paper.eval.eval_batch_size) == paper.eval
        assert [dataclasses.replace(p, max_micro_batch_size=None) for p in fitted.phases] == list(paper.phases)
        assert (fitted.train_batch_size, fitted.num_train_steps, fitted.learning_rate) == (256, 1_000_000, 1e-4)
        models = PLATFORMS[name].models
        for phase in fitted.phases:  # each phase at the micro-batch estimated at its own length
            assert fitted.phase_micro_batch_size(phase) == (
                PLATFORMS[name].max_micro_batch_size(paper.model.preset, phase.max_seq_length) if models else None)
    assert paper.mixed_precision == "float32" and paper.max_micro_batch_size is None  # the original, untouched


def test_phase_one_fits_more_sequences_and_an_explicit_flag_still_wins():
    fitted = apply_platform(load_recipe("bert_large_paper"), "tpu_v4")
    short, long = (fitted.phase_micro_batch_size(p) for p in fitted.phases)
    assert short >= 4 * long
    flagged = fitted.override({"max_micro_batch_size": 4})  # what bert-pretrain --max_micro_batch_size=4 does
    assert [flagged.phase_micro_batch_size(p) for p in flagged.phases] == [4, 4]


def test_unknown_platforms_models_and_lengths_say_what_to_do():
    with pytest.raises(RecipeError, match=r"--platform='tpu_v9' is unknown: use one of .*tpu_v4"):
        apply_platform(load_recipe("bert_base_paper"), "tpu_v9")
    with pytest.raises(PlatformsError, match="has settings for the base, large presets, not for this model .tiny."):
        apply_platform(load_recipe("demo_cpu"), "a100_80gb")
    with pytest.raises(PlatformsError, match=r"--platform=a100_80gb has micro-batches for base at 128, 512 tokens, "
                                             r"not at max_seq_length=256: pass --max_micro_batch_size instead."):
        apply_platform(load_recipe("bert_base_paper").override({"phases.1.max_seq_length": 256}), "a100_80gb")


# The replicas one process drives: every chip of a TPU VM or pod slice (v4-8 has 4 chips, v5e-256 256), or the GPUs
# of one machine.
PROCESS_REPLICAS = {"tpu": (1, 4, 8, 16, 32, 64, 128, 256), "gpu": (1, 2, 4, 8)}


@pytest.mark.parametrize("name", [n for n in sorted(PLATFORMS) if PLATFORMS[n].device])
def test_each_accelerator_platform_sets_an_eval_batch_that_splits_over_its_replicas(name):
    """The paper's eval_batch_size 8 does not split over 16 TPU chips (one process drives them all), which the run
    refuses before its first step; each accelerator's platform sets one that splits on its usual machines."""
    from bert_tf.training.evaluation import check_eval_batch_size
    from bert_tf.training.input_hosts import group_by_host
    from bert_tf.training.strategy import WorkerLayout

    fitted = apply_platform(load_recipe("bert_large_paper"), name)
    assert fitted.eval.eval_batch_size == PLATFORMS[name].eval_batch_size
    kind = "tpu" if name.startswith("tpu") else "gpu"
    for replicas in PROCESS_REPLICAS[kind]:
        per_host = min(replicas, 4 if kind == "tpu" else 8)
        devices = [f"/job:worker/task:{r // per_host}/device:{kind.upper()}:{r % per_host}" for r in range(replicas)]
        check_eval_batch_size(fitted.eval.eval_batch_size, WorkerLayout(replicas, replicas, 1, 0,
                                                                         group_by_host(devices)))


@pytest.mark.parametrize("name", [n for n in sorted(PLATFORMS) if PLATFORMS[n].device])
def test_each_accelerator_platform_says_where_its_memory_figures_come_from(name):
    """No accelerator has measured its step yet: h100_80gb's figures are XLA:GPU's buffers compiled ahead of time
    for an H100 target with jaxlib 0.11.2 (recorded under xla_gpu_estimates), the TPU entries' XLA:TPU's compiled by
    libtpu 0.0.51 for one chip (under xla_tpu_estimates), the A100 entries name the XLA:CPU estimate and
    TensorFlow's version; each keeps a margin for what its compiler's buffers miss."""
    if name in XLA_GPU_ESTIMATES:
        assert PLATFORMS[name].memory_source == "XLA:GPU estimate, jaxlib 0.11.2 (ahead of time, H100 target)"
    elif name.startswith("tpu_"):
        assert PLATFORMS[name].memory_source == "XLA:TPU estimate, libtpu 0.0.51"
    else:
        assert PLATFORMS[name].memory_source == "XLA:CPU estimate, TensorFlow 2.21"
    assert PLATFORMS[name].memory_margin == 0.2
    assert GPU_ESTIMATED == ["h100_80gb"]
    assert sorted(XLA_TPU_ESTIMATES) == ["tpu_v4", "tpu_v5e", "tpu_v5p", "tpu_v6e"]


@pytest.mark.parametrize("name", sorted(XLA_TPU_ESTIMATES))
def test_a_tpu_entry_takes_the_largest_power_of_two_xla_tpu_fits_under_its_margin_as_the_results_plan_it(name):
    """Each TPU entry's micro-batch at each length is the largest power of two up to 256 whose whole-model peak from
    XLA:TPU (libtpu 0.0.51) stays under (1 - margin) of the chip's HBM: the figure at it fits, the one at twice it
    does not. And the recorded figures are what `bert_tf.platforms` plans from the raw rows, to the hundredth of a
    GiB."""
    platform, figures = PLATFORMS[name], XLA_TPU_ESTIMATES[name]
    assert figures["device_gib"] == DEVICES[platform.device].memory_gib
    budget_gib = (1 - platform.memory_margin) * figures["device_gib"]
    planned = plan_tpu(ROWS["xla_tpu"], platform.memory_margin)[name]
    assert planned["compiler"] == platform.memory_source.split(", ")[1] == "libtpu 0.0.51"
    for preset in ("base", "large"):
        assert set(platform.models[preset].max_micro_batch_size) == set(figures[preset]) == {128, 512}
        for seq_length, steps in figures[preset].items():
            where = (preset, seq_length)
            micro = platform.max_micro_batch_size(preset, seq_length)
            assert micro == planned["models"][preset][seq_length] and micro & (micro - 1) == 0, where
            assert steps[micro].get("no_remat_peak_gib", steps[micro]["peak_gib"]) <= budget_gib, where
            if 2 * micro in steps:
                assert steps[2 * micro].get("no_remat_peak_gib", steps[2 * micro]["peak_gib"]) > budget_gib, where
            else:  # the cap, or a line proportional from one figure that could not be read below it
                assert micro == 256 or len(planned["figures"][preset][seq_length]) == 1, where
            for m, step in steps.items():
                raw = planned["figures"][preset][seq_length][m]
                assert step["peak_gib"] == pytest.approx(raw["peak_bytes"] / GIB, abs=0.006), (where, m)
                assert step["arguments_gib"] == pytest.approx(raw["argument_bytes"] / GIB, abs=0.006), (where, m)
                assert step.get("extrapolated", False) == raw["extrapolated"], (where, m)


def test_a_platforms_file_without_memory_sources_still_loads_and_bad_ones_say_what_to_write(tmp_path):
    entry = {"device": "h100_80gb", "mixed_precision": "mixed_bfloat16",
             "models": {"base": {"max_micro_batch_size": {128: 256, 512: 128}}}}
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump({"platforms": {"h100_80gb": entry}}))
    loaded = load_platforms(str(old))["h100_80gb"]
    assert (loaded.memory_source, loaded.memory_margin, loaded.max_micro_batch_size("base", 512)) == (None, None, 128)

    for fields, message in (
            ({"memory_source": "measured", "memory_margin": 0.1}, r"old.yaml: platforms.h100_80gb: memory_source="
                                                                  r"'measured' must start with 'XLA:CPU estimate' or"),
            ({"memory_source": "XLA:CPU estimate, TensorFlow 2.21"},
             r"memory_margin=None must be given with an estimate"),
            ({"memory_source": "XLA:GPU measured on NVIDIA H100 80GB HBM3", "memory_margin": 1.5},
             r"memory_margin=1.5 must be the share of device memory left free, from 0 up to")):
        old.write_text(yaml.safe_dump({"platforms": {"h100_80gb": {**entry, **fields}}}))
        with pytest.raises(PlatformsError, match=message):
            load_platforms(str(old))
    measured = {**entry, "memory_source": "XLA:GPU measured on NVIDIA H100 80GB HBM3", "memory_margin": 0.05}
    old.write_text(yaml.safe_dump({"platforms": {"h100_80gb": measured}}))
    assert load_platforms(str(old))["h100_80gb"].memory_source.endswith("H100 80GB HBM3")


def test_the_loader_checks_compiled_figures_against_the_entries_they_plan(tmp_path):
    """xla_tpu_estimates (and xla_gpu_estimates) are read: each names an entry of the same compiler, holds its
    chosen micro-batches, each peak is arguments + temporaries, and none exceeds (1 - margin) of the chip."""
    entry = {"device": "tpu_v5e", "mixed_precision": "mixed_bfloat16", "memory_margin": 0.2,
             "memory_source": "XLA:TPU estimate, libtpu 0.0.51",
             "models": {"large": {"max_micro_batch_size": {512: 8}}}}
    figures = {"device_gib": 16, "large": {512: {8: {"arguments_gib": 3.76, "temporaries_gib": 5.92, "peak_gib": 9.68},
                                                 16: {"arguments_gib": 3.76, "temporaries_gib": 9.12,
                                                      "peak_gib": 12.88}}}}
    path = tmp_path / "platforms.yaml"

    def load(entry_fields=None, figure_fields=None):
        path.write_text(yaml.safe_dump({"platforms": {"tpu_v5e": {**entry, **(entry_fields or {})}},
                                        "xla_tpu_estimates": {"tpu_v5e": {**figures, **(figure_fields or {})}}}))
        return load_platforms(str(path))

    assert load()["tpu_v5e"].max_micro_batch_size("large", 512) == 8
    for entry_fields, figure_fields, message in (
            ({"models": {"large": {"max_micro_batch_size": {512: 16}}}}, None,
             r"xla_tpu_estimates.tpu_v5e.large.512.16: a peak of 12.88 GiB exceeds 12.80 GiB, \(1 - memory_margin\) "
             r"of the device: choose a smaller micro-batch for platforms.tpu_v5e."),
            ({"models": {"large": {"max_micro_batch_size": {512: 4}}}}, None,
             r"has no large step at 512 tokens x 4, the entry's micro-batch: compile it"),
            ({"memory_source": "XLA:CPU estimate, TensorFlow 2.21"}, None,
             r"xla_tpu_estimates.tpu_v5e plans no platform: add platforms.tpu_v5e with memory_source: "
             r"'XLA:TPU estimate, ...'"),
            (None, {"device_gib": 32}, r"device_gib=32 must be the device's memory in GiB, at most 16.0 for tpu_v5e"),
            (None, {"large": {512: {8: {"arguments_gib": 3.76, "temporaries_gib": 5.92, "peak_gib": 8.0}}}},
             r"peak_gib=8.0 is not arguments_gib \+ temporaries_gib")):
        with pytest.raises(PlatformsError, match=message):
            load(entry_fields, figure_fields)
    # Without recomputation the peak is what the plan reads: 16 sequences fit a 0.15 margin only on the chip's own
    # compile (12.88 GiB of 13.6), not as the step holds them without recomputing (14.0 GiB).
    figures["large"][512][16]["no_remat_peak_gib"] = 14.0
    with pytest.raises(PlatformsError, match=r"a peak of 14.0 GiB exceeds 13.60 GiB"):
        load({"memory_margin": 0.15, "models": {"large": {"max_micro_batch_size": {512: 16}}}})


def test_tools_estimate_memory_is_the_one_tools_cpu_estimate():
    """`tools/estimate_memory.py --config --phases` (the command users type) runs the one tool's `cpu` estimate."""
    shown = subprocess.run([sys.executable, os.path.join("tools", "estimate_memory.py"), "--help"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "--phases" in shown.stdout and "--row_packing" in shown.stdout and "--jsonl" in shown.stdout

"""`bert_tf.platforms`' planning, pure Python (no jax, no GPU, no libtpu, no TensorFlow): a GPU target's memory and
the TPU chips' compile settings, the exported step folders, a raw row's peak from XLA's buffer sizes, the
rematerialized instructions of a compiled program, the one depth extrapolation, the one rule for the micro-batch
that fits, and the plan of the TPU entries from rows."""

import json
import os

import pytest

from bert_tf.accelerators.device_peaks import DEVICES
from bert_tf.platforms.compile_targets import (
    TPU_TARGETS,
    device_memory_bytes,
    scaled_target,
    tpu_hbm_gib,
    tpu_init_args,
    tpu_target_of,
)
from bert_tf.platforms.compiled_plan import plan_micro_batch, plan_tpu, scaled, temporaries_ratio, whole_model_figures
from bert_tf.platforms.compiler_rows import (
    compiled_row,
    done_keys,
    peak_bytes,
    read_rows,
    remat_instructions,
    step_folders,
)
from bert_tf.platforms.depth import extrapolate_depth
from bert_tf.platforms.micro_batch import GIB, fits, largest_fitting_micro_batch
from helpers import REPO

GPU_TARGET_FILE = os.path.join(REPO, "tools", "xla", "h100_sxm_target.txtpb")
RUN = {"command": "python tools/xla/plan_platforms.py compile ..."}


def test_the_h100_target_description_is_in_the_repository_and_names_its_memory():
    with open(GPU_TARGET_FILE, encoding="utf-8") as f:
        text = f.read()
    assert device_memory_bytes(text) == 84942979072  # what CUDA reports for an H100 80GB HBM3 (79.1 GiB)
    assert 'device_description_str: "NVIDIA H100 80GB HBM3"' in text
    with pytest.raises(ValueError, match="no device_memory_size"):
        device_memory_bytes("gpu_device_info { core_count: 132 }")
    doubled = scaled_target(text, 2)  # --memory_scale=2: the step without XLA's rematerialization to fit the card
    assert device_memory_bytes(doubled) == 2 * 84942979072 and doubled.replace("169885958144", "84942979072") == text
    assert scaled_target(text, 1) is text


def test_a_folder_of_steps_stands_for_its_steps_and_a_folder_without_any_says_so(tmp_path):
    for name in ("large_128_mb256", "base_128_mb256"):
        (tmp_path / "set" / name).mkdir(parents=True)
        (tmp_path / "set" / name / "manifest.json").write_text("{}")
    (tmp_path / "set" / "notes").mkdir()
    one = str(tmp_path / "set" / "large_128_mb256")
    assert step_folders([one]) == [one]
    assert step_folders([str(tmp_path / "set")]) == [str(tmp_path / "set" / n) for n in ("base_128_mb256",
                                                                                         "large_128_mb256")]
    with pytest.raises(ValueError, match="neither a step folder nor a folder of steps"):
        step_folders([str(tmp_path / "set" / "notes")])


def test_a_row_gives_the_peak_without_the_outputs_that_reuse_donated_arguments(tmp_path):
    manifest = {"preset": "large", "precision": "mixed_bfloat16", "batch": 256, "seq": 128, "micro_batch": 256}
    stats = {"argument_bytes": 4 * GIB, "temporary_bytes": 28 * GIB, "output_bytes": 4 * GIB + 10,
             "alias_bytes": 4 * GIB}
    row = compiled_row("large_128_mb256", manifest, stats, 80 * GIB, 246.92, "NVIDIA H100 80GB HBM3",
                       {"jaxlib": "0.11.2"}, {**RUN, "memory_scale": 2})
    assert row["peak_bytes"] == peak_bytes(row) == 32 * GIB + 10
    assert (row["argument_gib"], row["temporary_gib"], row["peak_gib"], row["fraction_of_device"]) == (
        4.0, 28.0, 32.0, 0.4)
    assert (row["compile_s"], row["memory_scale"]) == (246.9, 2)  # the share is of the real card, not the target
    assert (row["command"], row["source"]) == (RUN["command"], "measured")
    jsonl = tmp_path / "figures.jsonl"
    assert read_rows(str(jsonl)) == []
    jsonl.write_text(json.dumps(row) + "\n")
    assert done_keys(read_rows(str(jsonl))) == {("large_128_mb256", "NVIDIA H100 80GB HBM3", 2)}  # then skipped


def test_a_row_without_its_command_or_a_known_source_is_refused(tmp_path):
    jsonl = tmp_path / "rows.jsonl"
    for row in ({"name": "a", "source": "measured"}, {"name": "a", "command": "python x.py", "source": "recalled"}):
        jsonl.write_text(json.dumps(row) + "\n")
        with pytest.raises(ValueError, match=r"rows.jsonl:1: a row must name its command and a source of measured, "
                                             r"transcribed"):
            read_rows(str(jsonl))


def test_a_tpu_row_names_libtpu_and_a_refused_step_says_why_without_figures():
    manifest = {"preset": "large", "precision": "mixed_bfloat16", "batch": 256, "seq": 512, "micro_batch": 32,
                "num_hidden_layers": 24, "step": "tpu_loop"}
    stats = {"argument_bytes": 4 * GIB, "temporary_bytes": 10 * GIB, "output_bytes": 4 * GIB,
             "alias_bytes": 4 * GIB}
    versions = {"jaxlib": "0.11.2", "compiler": "libtpu 0.0.51"}
    row = compiled_row("large_512_mb32", manifest, stats, 16 * GIB, 900.04, "TPU v5 lite", versions,
                       {**RUN, "extra": {"remat_instructions": 0}})
    assert (row["peak_gib"], row["fraction_of_device"], row["compiler"], row["layers"], row["step"]) == (
        14.0, 0.875, "libtpu 0.0.51", 24, "tpu_loop")
    refused = compiled_row("large_512_mb64", manifest, None, 16 * GIB, 0.0, "TPU v5 lite", versions,
                           {**RUN, "extra": {"error": "RESOURCE_EXHAUSTED: Ran out of memory"}})
    assert "peak_bytes" not in refused and refused["error"].startswith("RESOURCE_EXHAUSTED")
    assert refused["device_gib"] == 16.0


def test_the_tpu_chips_are_the_platforms_devices_and_a_larger_chip_is_one_libtpu_flag():
    for name, (topology, kind) in TPU_TARGETS.items():
        assert tpu_hbm_gib(name) == DEVICES[name].memory_gib, name  # the one table the budgets come from
        assert topology.startswith(name[len("tpu_"):] + ":") and kind.startswith("TPU v" + name[len("tpu_v")]), name
        assert tpu_target_of(kind) == name
    assert tpu_target_of("NVIDIA H100 80GB HBM3") is None
    assert tpu_init_args(16, 1) == ""  # the chip's own limit
    assert tpu_init_args(16, 2) == "--xla_tpu_max_hbm_size_mib=32768"


def test_rematerialized_instructions_are_counted_once_each():
    text = ("%fusion.12 = bf16[8,512] fusion(%p0)\n%fusion.12.remat = bf16[8,512] fusion(%p0)\n"
            "%copy.3.remat2 = f32[4] copy(%fusion.12.remat)\nROOT %t = tuple(%fusion.12.remat, %copy.3.remat2)")
    assert remat_instructions(text) == 2
    assert remat_instructions("%fusion.1 = f32[2] fusion(%rematerialize_me)") == 0


def test_the_depth_extrapolation_is_the_line_through_the_two_shallowest_depths():
    assert extrapolate_depth({2: {"a": 3.0, "b": 1.0}, 1: {"a": 2.0, "b": 1.0}, 4: {"a": 0.0, "b": 0.0}}, 24) == {
        "a": 25.0, "b": 1.0}  # a depth beyond the two shallowest is the check, not an input
    with pytest.raises(ValueError, match=r"depths \[1\]: two depths are needed to extrapolate to 24 blocks"):
        extrapolate_depth({1: {"a": 2.0}}, 24)


def test_the_whole_model_is_the_line_through_two_depths_at_each_micro_batch():
    def line(micro, layers, temporaries_gib):
        arguments = (0.5 + 0.15 * layers) * GIB
        return {"micro_batch": micro, "layers": layers, "argument_bytes": arguments,
                "temporary_bytes": temporaries_gib * GIB, "peak_bytes": arguments + temporaries_gib * GIB}

    shallow = [line(8, 1, 1.0), line(8, 2, 1.4), line(32, 1, 2.0), line(32, 2, 3.2), line(64, 1, 3.0),
               {"micro_batch": 128, "layers": 1, "error": "RESOURCE_EXHAUSTED"}]
    whole = whole_model_figures(shallow, 24)
    assert sorted(whole) == [8, 32]  # 64 has one depth only, 128 no figures
    assert whole[8]["temporary_bytes"] / GIB == pytest.approx(1.0 + 0.4 * 23)
    assert whole[32]["temporary_bytes"] / GIB == pytest.approx(2.0 + 1.2 * 23)
    assert whole[32]["argument_bytes"] / GIB == pytest.approx(0.5 + 0.15 * 24)
    assert whole[32]["peak_bytes"] == pytest.approx(whole[32]["argument_bytes"] + whole[32]["temporary_bytes"])


def test_the_micro_batch_is_the_largest_power_of_two_dividing_the_batch_under_the_margin():
    device = 80 * GIB  # budget at a 0.2 margin: 64 GiB
    assert fits(64 * GIB, device, 0.2) and not fits(64 * GIB + 1, device, 0.2)
    # Measured at 32 and 64: 8 GiB fixed + 0.5 GiB per sequence; 64 -> 40 GiB fits, 128 -> 72 GiB does not.
    points = [(32, 24 * GIB), (64, 40 * GIB)]
    assert largest_fitting_micro_batch(points, device, 0.2) == 64
    assert largest_fitting_micro_batch(points, device, 0.05) == 128  # 72 <= 76
    assert largest_fitting_micro_batch(points, device, 0.05, batch=32) == 32  # a replica's share of 8 replicas
    assert largest_fitting_micro_batch(points, device, 0.05, batch=96) == 32  # 64 does not divide 96
    # Between two points the line through them; beyond the largest, the line through the two largest.
    assert largest_fitting_micro_batch([(16, 16 * GIB), (64, 40 * GIB)], device, 0.2) == 64
    # One point: proportional from zero, which over-estimates a step with fixed weights (the safe side).
    assert largest_fitting_micro_batch([(256, 32 * GIB)], device, 0.2) == 256  # capped at the batch
    assert largest_fitting_micro_batch([(64, 40 * GIB)], device, 0.2) == 64
    assert largest_fitting_micro_batch([(1, 70 * GIB)], device, 0.2) is None


def test_a_tpu_entry_is_planned_from_the_whole_model_compiled_where_it_was_and_extrapolated_elsewhere():
    """Shallow steps at 8 and 32 sequences put the whole model (24 blocks) at 4.3 and 14.2 GiB; the whole model
    compiled at 32 (13.5 GiB of a 16 GiB chip with recomputation, 14.5 GiB without) overrides the line there."""
    def line(micro, layers, temporaries_gib, scale=1, remat=0):
        return {"micro_batch": micro, "layers": layers, "memory_scale": scale, "argument_bytes": GIB,
                "temporary_bytes": temporaries_gib * GIB, "peak_bytes": GIB + temporaries_gib * GIB,
                "remat_instructions": remat}

    shallow = [line(8, 1, 1.0), line(32, 1, 1.0 + 24 * 0.125), line(8, 2, 1.0 + 8 * 0.0125),
               line(32, 2, 4.0 + 32 * 0.0125)]
    figures = whole_model_figures(shallow, 24)
    assert [figures[m]["extrapolated"] for m in (8, 32)] == [True, True]
    per_sequence = (figures[32]["peak_bytes"] - figures[8]["peak_bytes"]) / 24 / GIB
    assert per_sequence == pytest.approx(0.125 + 23 * 0.0125)
    micro, chosen = plan_micro_batch(figures, 16 * GIB, 0.2)  # 12.8 GiB: 16 fits, 32 does not
    assert micro == 16 and sorted(chosen) == [16, 32] and chosen[16]["extrapolated"]
    assert chosen[16]["peak_bytes"] == pytest.approx(figures[8]["peak_bytes"] + 8 * per_sequence * GIB)

    compiled = shallow + [line(32, 24, 12.5, remat=40), line(32, 24, 13.5, scale=2), line(64, 24, 20.0, scale=2)]
    figures = whole_model_figures(compiled, 24)
    assert figures[32]["extrapolated"] is False and figures[32]["no_remat_peak_bytes"] == 14.5 * GIB
    assert 64 not in figures  # a compile for a larger chip alone is no figure for this one
    assert plan_micro_batch(figures, 16 * GIB, 0.05)[0] == 32  # 14.5 GiB without recomputation <= 15.2
    assert plan_micro_batch(figures, 16 * GIB, 0.1)[0] == 16  # 14.5 > 14.4: the peak with recomputation would fit


def test_one_figure_plans_only_at_or_above_itself():
    """With the whole model at one micro-batch only, the line is proportional from zero: an over-estimate above that
    micro-batch (safe to choose) and an under-estimate below it (refused, naming what to compile)."""
    one = {64: {"argument_bytes": 2 * GIB, "temporary_bytes": 6 * GIB, "peak_bytes": 8 * GIB, "extrapolated": True}}
    micro, chosen = plan_micro_batch(one, 16 * GIB, 0.2)  # 128 read as 16 GiB > 12.8
    assert micro == 64 and chosen[64] == one[64]
    assert chosen[128] == {"argument_bytes": 2 * GIB, "temporary_bytes": 14 * GIB, "peak_bytes": 16 * GIB,
                           "extrapolated": True}
    micro, chosen = plan_micro_batch(one, 32 * GIB, 0.2)  # 16 GiB <= 25.6; 256 read as 32 GiB does not fit
    assert micro == 128 and sorted(chosen) == [128, 256] and chosen[256]["peak_bytes"] == 32 * GIB
    with pytest.raises(ValueError, match="one figure, at 64 sequences, does not fit: compile a smaller micro-batch"):
        plan_micro_batch(one, 8 * GIB, 0.2)


def test_a_chip_without_its_own_shallow_steps_borrows_another_chips_with_its_larger_temporaries():
    def line(device, micro, layers, temporaries_gib):
        return {"device": device, "name": f"large_512_mb{micro}_l{layers}", "preset": "large", "seq": 512,
                "micro_batch": micro, "layers": layers, "memory_scale": 1, "step": "tpu_loop",
                "compiler": "libtpu 0.0.51", "argument_bytes": 0.1 * layers * GIB,
                "temporary_bytes": temporaries_gib * GIB, "peak_bytes": (0.1 * layers + temporaries_gib) * GIB,
                "remat_instructions": 0}

    v5e = [line("TPU v5 lite", m, n, t) for m, n, t in ((8, 1, 1.0), (32, 1, 2.0), (8, 2, 1.1), (32, 2, 2.3))]
    v4 = [line("TPU v4", 32, 1, 4.0)]  # twice v5e's temporaries for the same step
    assert temporaries_ratio(v4, v5e) == 2.0 and temporaries_ratio(v5e[1:2], v4) == 1.0  # never below 1
    assert scaled({8: {"temporary_bytes": 4.0, "peak_bytes": 10.0}}, 1.25)[8] == {"temporary_bytes": 5.0,
                                                                                  "peak_bytes": 11.0}
    # v5e at 24 blocks: 5.7 GiB at 8, 11.3 GiB at 32, 18.8 GiB at 64: 32 fits 12.8 GiB.
    plans = plan_tpu(v5e + v4, 0.2)
    assert plans["tpu_v5e"]["models"] == {"large": {512: 32}} and plans["tpu_v5e"]["borrowed"] == []
    # v4 (25.6 GiB) on v5e's figures would take 64 (18.8 GiB); with its doubled temporaries 64 is 35.1 GiB.
    assert plans["tpu_v4"]["borrowed"] == [("large", 512)] and plans["tpu_v4"]["ratio"] == 2.0
    assert plans["tpu_v4"]["models"] == {"large": {512: 32}}
    alike = plan_tpu(v5e + [line("TPU v4", 32, 1, 2.0)], 0.2)
    assert alike["tpu_v4"]["models"] == {"large": {512: 64}}

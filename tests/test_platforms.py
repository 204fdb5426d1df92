"""`bert-pretrain --platform`: settings that fit each accelerator, derived from the recorded XLA memory estimate,
and that leave the paper's recipe (global batch, schedule, phases) as it is."""

import pytest
import yaml

from bert_tf.accelerators.device_peaks import DEVICES
from bert_tf.analysis.memory_estimate import GIB, HEADROOM, MemoryEstimate
from bert_tf.training.platforms import PLATFORMS_FILE, apply_platform, load_platforms
from bert_tf.training.recipe import RecipeError, load_recipe

with open(PLATFORMS_FILE, encoding="utf-8") as f:
    ESTIMATES = yaml.safe_load(f)["estimates"]
PLATFORMS = load_platforms()
ASKED = ("tpu_v4", "tpu_v5e", "a100_80gb", "a100_40gb", "h100_80gb", "cpu")


def test_the_platforms_the_issue_names_exist():
    assert set(ASKED) <= set(PLATFORMS)


@pytest.mark.parametrize("name", [n for n in sorted(PLATFORMS) if PLATFORMS[n].device])
def test_each_micro_batch_is_the_largest_power_of_two_that_fits_the_device(name):
    platform = PLATFORMS[name]
    budget = HEADROOM * DEVICES[platform.device].memory_gib * GIB
    assert platform.mixed_precision == "mixed_bfloat16"
    for preset in ("base", "large"):
        figures = ESTIMATES[preset]
        estimate = MemoryEstimate(figures["fixed_gib"] * GIB, figures["per_sequence_gib"] * GIB, (4, 16))
        micro = platform.max_micro_batch_size(preset)
        assert micro & (micro - 1) == 0, (preset, micro)  # divides every power-of-two replica batch
        assert estimate.bytes_for(micro) <= budget, (preset, micro)
        assert micro == 256 or estimate.bytes_for(2 * micro) > budget, (preset, micro)


@pytest.mark.parametrize("name", ["tpu_v4", "a100_40gb", "cpu"])
def test_a_platform_changes_only_how_a_step_is_computed(name):
    for recipe_name in ("bert_base_paper", "bert_large_paper"):
        paper = load_recipe(recipe_name)
        fitted = apply_platform(paper, name)
        changed = {k for k, v in fitted.to_dict().items() if paper.to_dict()[k] != v}
        assert changed <= {"mixed_precision", "max_micro_batch_size"}
        assert (fitted.train_batch_size, fitted.num_train_steps, fitted.learning_rate) == (256, 1_000_000, 1e-4)
    assert paper.mixed_precision == "float32" and paper.max_micro_batch_size is None  # the original, untouched


def test_unknown_platforms_and_models_say_what_to_do():
    with pytest.raises(RecipeError, match=r"--platform='tpu_v9' is unknown: use one of .*tpu_v4"):
        apply_platform(load_recipe("bert_base_paper"), "tpu_v9")
    with pytest.raises(RecipeError, match="has settings for the base, large presets, not for this model .tiny."):
        apply_platform(load_recipe("demo_cpu"), "a100_80gb")

"""Per-platform settings (`bert-pretrain --platform`): the compute precision and the micro-batch that fits each
accelerator, for the paper's models, from configs/platforms.yaml.

A platform changes only how a step is computed (mixed precision, micro-batches accumulated into the same global
batch), never what is trained: the global batch, the schedule and the phases stay the recipe's. How the figures
were derived is written in the YAML and in docs/accelerators.md.
"""

import dataclasses
import os

import yaml

from bert_tf.config import configs_dir
from bert_tf.training.recipe import RecipeError

PLATFORMS_FILE = os.path.join(configs_dir(), "platforms.yaml")


@dataclasses.dataclass(frozen=True)
class PlatformSettings:
    """One platform's entry.

    Attributes:
        name: the `--platform` value.
        device: the `device_peaks.DEVICES` key of one replica's device (None for CPUs).
        mixed_precision: the recipe's `mixed_precision` on this platform.
        models: per model preset ("base", "large"): `max_micro_batch_size` and the memory estimate behind it.
    """

    name: str
    device: str
    mixed_precision: str
    models: dict

    def max_micro_batch_size(self, preset):
        """The micro-batch for a model preset; a `RecipeError` naming the presets the platform knows otherwise."""
        if preset not in self.models:
            raise RecipeError(f"--platform={self.name} has settings for the {', '.join(sorted(self.models))} "
                              f"presets, not for this model ({preset or 'a bert_config_file'}): pass "
                              f"--max_micro_batch_size and --mixed_precision instead.")
        return self.models[preset]["max_micro_batch_size"]


def load_platforms(path=PLATFORMS_FILE):
    """{name: `PlatformSettings`} from the platforms YAML.

    Example:
    >>> load_platforms()["tpu_v4"].mixed_precision
    'mixed_bfloat16'
    """
    with open(path, encoding="utf-8") as f:
        entries = yaml.safe_load(f)["platforms"]
    return {name: PlatformSettings(name, entry.get("device"), entry["mixed_precision"], entry.get("models", {}))
            for name, entry in entries.items()}


def apply_platform(recipe, name):
    """`recipe` with the platform's mixed precision and the micro-batch of the recipe's model preset.

    Example:
    >>> recipe = apply_platform(load_recipe("bert_large_paper"), "a100_40gb")  # doctest: +SKIP
    >>> recipe.mixed_precision, recipe.train_batch_size  # doctest: +SKIP
    ('mixed_bfloat16', 256)
    """
    platforms = load_platforms()
    if name not in platforms:
        raise RecipeError(f"--platform={name!r} is unknown: use one of {', '.join(sorted(platforms))}.")
    platform = platforms[name]
    preset = None if recipe.model.bert_config_file else recipe.model.preset
    micro = platform.max_micro_batch_size(preset) if platform.models else None
    return recipe.with_overrides(mixed_precision=platform.mixed_precision, max_micro_batch_size=micro)

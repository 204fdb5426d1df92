"""The platforms file (configs/platforms.yaml) `bert-pretrain --platform` reads: its schema, its loading and its
checks. Each entry gives the compute precision and the micro-batch that fits one accelerator, for the paper's models;
the figures behind the micro-batches sit in the same file, and the loader checks every entry against them by the one
rule (`micro_batch.fits`). `training/platforms.py` applies an entry to a recipe. How the figures were derived is in
docs/accelerators.md ("Platforms"); tools/xla/plan_platforms.py writes the file from its raw rows.
"""

import dataclasses
import os
from typing import Optional

import yaml

from bert_tf.accelerators.device_peaks import DEVICES
from bert_tf.config import configs_dir
from bert_tf.config_loading import load_config
from bert_tf.config_schema import ConfigError, Section
from bert_tf.platforms.compute_settings import JIT_COMPILE_SCOPES, MIXED_PRECISION
from bert_tf.platforms.micro_batch import fits

PLATFORMS_FILE = os.path.join(configs_dir(), "platforms.yaml")
# How a platform's memory figures may be sourced (`PlatformSettings.memory_source` starts with one of these).
MEMORY_SOURCES = ("XLA:CPU estimate", "XLA:GPU estimate", "XLA:GPU measured on", "XLA:TPU estimate",
                  "XLA:TPU measured on")
# The figures behind an estimate compiled by the device's own XLA, by the file's section: its memory_source starts so.
COMPILED_ESTIMATES = {"xla_gpu_estimates": "XLA:GPU estimate", "xla_tpu_estimates": "XLA:TPU estimate"}


class PlatformsError(ConfigError):
    """The platforms file, or a platform asked of it, is wrong; the message names the field, the value and the fix."""


@dataclasses.dataclass(frozen=True)
class ModelFit(Section):
    """What fits one platform's replica device for one model preset, per phase length.

    Attributes:
        max_micro_batch_size: {a phase's max_seq_length: sequences per replica per forward/backward pass}, each
            estimated at that length (shorter sequences fit more).
    """

    ERROR = PlatformsError
    max_micro_batch_size: dict

    def _rules(self):
        def positive(v):
            return isinstance(v, int) and not isinstance(v, bool) and v > 0

        fits = self.max_micro_batch_size
        return (("max_micro_batch_size",
                 isinstance(fits, dict) and fits and all(positive(k) and positive(v) for k, v in fits.items()),
                 "must map each phase length to a positive integer, e.g. {128: 64, 512: 16}"),)


@dataclasses.dataclass(frozen=True)
class PlatformSettings(Section):
    """One platform's entry.

    Attributes:
        name: the `--platform` value.
        device: the `device_peaks.DEVICES` key of one replica's device (None for CPUs).
        mixed_precision: the recipe's `mixed_precision` on this platform.
        models: per model preset ("base", "large"): its `ModelFit`.
        jit_compile, jit_compile_scope: the recipe's on this platform (None: the recipe's own). GPU platforms
            compile the whole step, so the host never waits on the device between steps.
        eval_batch_size: the recipe's `eval.eval_batch_size` here, a multiple of the replicas one process drives
            on the platform's machines (None keeps the recipe's).
        memory_source: where the memory figures behind the micro-batches come from, naming the compiler and its
            version or the device: "XLA:CPU estimate, TensorFlow 2.21" (the CPU compiler's buffer assignment,
            which is not the device compiler's), "XLA:TPU estimate, libtpu 0.0.51" (the device compiler's own,
            compiled without the device; its figures under the file's `xla_tpu_estimates`) or "XLA:GPU measured on
            NVIDIA H100 80GB HBM3" (optional: files written before it load; None says nothing about them).
        memory_margin: the share of the device's memory the micro-batches leave free for what the figures miss
            (an estimate's compiler differences, workspaces, fragmentation); required with an estimate.

    Example:
    >>> fits = {"base": ModelFit({128: 128, 512: 32})}
    >>> PlatformSettings("tpu_v4", "tpu_v4", "mixed_bfloat16", fits).max_micro_batch_size("base", 512)
    32
    """

    ERROR = PlatformsError
    name: str
    device: Optional[str]
    mixed_precision: str
    models: dict = dataclasses.field(default_factory=dict)
    jit_compile: Optional[bool] = None
    jit_compile_scope: Optional[str] = None
    eval_batch_size: Optional[int] = None
    memory_source: Optional[str] = None
    memory_margin: Optional[float] = None

    def _rules(self):
        source, margin = self.memory_source, self.memory_margin
        return (("memory_source", source is None or (isinstance(source, str) and source.startswith(MEMORY_SOURCES)),
                 f"must start with {' or '.join(map(repr, MEMORY_SOURCES))} and name the compiler's version or the "
                 f"device, e.g. 'XLA:CPU estimate, TensorFlow 2.21'"),
                ("memory_margin", margin is None or (isinstance(margin, (int, float)) and not isinstance(margin, bool)
                                                     and 0 <= margin < 1),
                 "must be the share of device memory left free, from 0 up to (not including) 1"),
                ("memory_margin", margin is not None or "estimate" not in (source or ""),
                 "must be given with an estimate (memory_source: XLA:... estimate): the share it leaves free"),
                ("device", self.device is None or self.device in DEVICES,
                 f"is not a known device: use one of {', '.join(sorted(DEVICES))} or null (CPU)"),
                ("eval_batch_size", self.eval_batch_size is None or self.eval_batch_size > 0,
                 "must be a positive integer or null"),
                ("mixed_precision", self.mixed_precision in MIXED_PRECISION,
                 f"must be one of {', '.join(MIXED_PRECISION)}"),
                ("jit_compile_scope", self.jit_compile_scope in (None,) + JIT_COMPILE_SCOPES,
                 f"must be one of {', '.join(JIT_COMPILE_SCOPES)} or null"))

    def max_micro_batch_size(self, preset, seq_length):
        """The micro-batch for a model preset at a phase's sequence length; a `PlatformsError` naming the presets and
        lengths the platform knows otherwise."""
        if preset not in self.models:
            raise PlatformsError(f"--platform={self.name} has settings for the {', '.join(sorted(self.models))} "
                                 f"presets, not for this model ({preset or 'a bert_config_file'}): pass "
                                 f"--max_micro_batch_size and --mixed_precision instead.")
        sizes = self.models[preset].max_micro_batch_size
        if seq_length not in sizes:
            raise PlatformsError(f"--platform={self.name} has micro-batches for {preset} at "
                                 f"{', '.join(map(str, sizes))} tokens, not at max_seq_length={seq_length}: pass "
                                 f"--max_micro_batch_size instead.")
        return sizes[seq_length]


@dataclasses.dataclass(frozen=True)
class _PlatformsFile(Section):
    ERROR = PlatformsError
    platforms: dict
    estimates: dict = dataclasses.field(default_factory=dict)
    # XLA:GPU's and XLA:TPU's buffers of the standard steps compiled ahead of time for the device
    # (tools/xla/plan_platforms.py), by platform, preset, length and micro-batch: the figures behind an "XLA:GPU
    # estimate" or "XLA:TPU estimate" entry (optional; `check_compiled_estimates` reads them).
    xla_gpu_estimates: dict = dataclasses.field(default_factory=dict)
    xla_tpu_estimates: dict = dataclasses.field(default_factory=dict)


def load_platforms(path=PLATFORMS_FILE):
    """{name: `PlatformSettings`} from the platforms YAML, checked by the shared config schema.

    Example:
    >>> load_platforms()["tpu_v4"].mixed_precision
    'mixed_bfloat16'
    """
    where = os.path.basename(path)
    loaded = load_config(_PlatformsFile, path, kind="platforms")
    entries = loaded.platforms
    platforms = {}
    for name, entry in entries.items():
        entry_where = f"{where}: platforms.{name}"
        if not isinstance(entry, dict):
            raise PlatformsError(f"{entry_where} must be a mapping of fields, got {entry!r}.")
        models = {preset: ModelFit.from_dict(fit, f"{entry_where}.models.{preset}")
                  for preset, fit in (entry.get("models") or {}).items()}
        platforms[name] = PlatformSettings.from_dict(
            {"device": None, **entry, "name": name, "models": models}, entry_where)
    for section, source in COMPILED_ESTIMATES.items():
        check_compiled_estimates(getattr(loaded, section), platforms, section, source, where)
    return platforms


def planning_peak_gib(figures):
    """The peak a micro-batch is planned from: without the recomputation the compiler does to fit the device
    (`no_remat_peak_gib`, compiled for a larger one) where it was recorded, else the peak compiled for the device.

    Example:
    >>> planning_peak_gib({"peak_gib": 11.5, "no_remat_peak_gib": 12.25}), planning_peak_gib({"peak_gib": 3.4})
    (12.25, 3.4)
    """
    return figures.get("no_remat_peak_gib", figures["peak_gib"])


def check_compiled_estimates(estimates, platforms, section, source, where):
    """Checks the figures a device compiler gave (`xla_gpu_estimates` or `xla_tpu_estimates`) against the entries
    they plan: each names a platform whose memory_source starts with `source`, gives `device_gib` (at most the
    device's), and for every micro-batch the entry chooses, a step whose planning peak stays under (1 - margin) of
    the device; each step's peak is its arguments plus temporaries. A `PlatformsError` names the figure and the fix."""
    for name, figures in estimates.items():
        at = f"{where}: {section}.{name}"
        platform = platforms.get(name)
        if platform is None or not (platform.memory_source or "").startswith(source):
            raise PlatformsError(f"{at} plans no platform: add platforms.{name} with memory_source: '{source}, ...' or "
                              f"remove the figures.")
        device_gib = figures.get("device_gib")
        if not isinstance(device_gib, (int, float)) or not 0 < device_gib <= DEVICES[platform.device].memory_gib:
            raise PlatformsError(f"{at}.device_gib={device_gib!r} must be the device's memory in GiB, at most "
                              f"{DEVICES[platform.device].memory_gib} for {platform.device}.")
        for preset, fit in platform.models.items():
            for seq_length, micro in fit.max_micro_batch_size.items():
                step = (figures.get(preset) or {}).get(seq_length, {}).get(micro)
                if step is None:
                    raise PlatformsError(f"{at} has no {preset} step at {seq_length} tokens x {micro}, the entry's "
                                     f"micro-batch: compile it and write the file again "
                                     f"(tools/xla/plan_platforms.py).")
                if abs(step["peak_gib"] - step["arguments_gib"] - step["temporaries_gib"]) > 0.02:
                    raise PlatformsError(f"{at}.{preset}.{seq_length}.{micro}: peak_gib={step['peak_gib']} is not "
                                         f"arguments_gib + temporaries_gib: record the compiler's three figures.")
                if not fits(planning_peak_gib(step), device_gib, platform.memory_margin):
                    raise PlatformsError(f"{at}.{preset}.{seq_length}.{micro}: a peak of {planning_peak_gib(step)} GiB "
                                         f"exceeds {(1 - platform.memory_margin) * device_gib:.2f} GiB, "
                                         f"(1 - memory_margin) of the device: choose a smaller micro-batch for "
                                         f"platforms.{name}.")


def platform_names(path=PLATFORMS_FILE):
    """The `--platform` values the file holds, in its order, read without checking the entries (for a command's
    help).

    Example:
    >>> "tpu_v5e" in platform_names()
    True
    """
    with open(path, encoding="utf-8") as f:
        return list(yaml.safe_load(f)["platforms"])

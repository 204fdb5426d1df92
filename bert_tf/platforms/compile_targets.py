"""The devices the XLA:GPU and XLA:TPU compilers compile a step for without the device (docs/accelerators.md,
"XLA:GPU's buffers without a GPU", "XLA:TPU's buffers without a TPU"): the TPU chips of the platforms, a GPU target
description's memory, and the settings that compile for a device `scale` times larger (its buffers without the
recomputation the compiler does to fit the real one)."""

import re

from bert_tf.accelerators.device_peaks import DEVICES

# The platforms' TPU devices: the jax topology whose first chip is compiled for, and the device kind jax names (the
# `device` of a raw row). A v4 or v5p chip has two TensorCores that TensorFlow and jax drive as one device
# (megacore, all the chip's HBM); v4's compile-only topology gives one device per core unless asked for megacore
# (`TPU_TOPOLOGY_OPTIONS`). Each chip's HBM is `DEVICES[target].memory_gib`.
TPU_TARGETS = {"tpu_v4": ("v4:2x2x1", "TPU v4"), "tpu_v5e": ("v5e:2x2", "TPU v5 lite"),
               "tpu_v5p": ("v5p:2x2x1", "TPU v5"), "tpu_v6e": ("v6e:2x2", "TPU v6 lite")}
TPU_TOPOLOGY_OPTIONS = {"tpu_v4": {"chip_config_name": "megacore"}}


def tpu_hbm_gib(target):
    """A TPU target's HBM in GiB, from the one device table.

    Example:
    >>> tpu_hbm_gib("tpu_v5e")
    16.0
    """
    return DEVICES[target].memory_gib


def tpu_target_of(device_kind):
    """The TPU target whose chip jax names `device_kind` ("TPU v5 lite" -> "tpu_v5e"); None for other devices."""
    return next((target for target, (_, kind) in TPU_TARGETS.items() if kind == device_kind), None)


def device_memory_bytes(target_text):
    """The card's memory in bytes, as a GPU target description's `device_memory_size` says.

    Example:
    >>> device_memory_bytes("gpu_device_info { device_memory_size: 1024 }")
    1024
    """
    match = re.search(r"device_memory_size:\s*(\d+)", target_text)
    if not match:
        raise ValueError("the target description has no device_memory_size")
    return int(match.group(1))


def scaled_target(target_text, scale):
    """The GPU target description with its device_memory_size times `scale`: XLA:GPU rematerializes (recomputes
    activations instead of keeping them) to fit a limit derived from the card's memory, so a step compiled for a card
    `scale` times larger shows what it holds without that recomputation."""
    if scale == 1:
        return target_text
    memory = device_memory_bytes(target_text)
    return re.sub(r"device_memory_size:\s*\d+", f"device_memory_size: {int(memory * scale)}", target_text, count=1)


def tpu_init_args(device_gib, scale):
    """libtpu's flags (LIBTPU_INIT_ARGS) for a chip with `scale` times its HBM: empty at 1, so the chip's own limit
    applies.

    Example:
    >>> tpu_init_args(16, 1), tpu_init_args(16, 2)
    ('', '--xla_tpu_max_hbm_size_mib=32768')
    """
    if scale == 1:
        return ""
    return f"--xla_tpu_max_hbm_size_mib={int(device_gib * 1024 * scale)}"

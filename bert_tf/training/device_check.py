"""Refusing to train on the wrong device, before the first step: a TPU strategy without a TPU, a `--platform` for
GPUs or TPUs on a machine without them, and a whole-step XLA scope a strategy cannot compile.

Each refusal is an `InputError` (exit 2) on one line naming what was found and the install command. Checked where
the run starts (`PretrainingRun.prepare`, `create_strategy`), not in `apply_platform`, which only edits a recipe and
which the tests call on CPUs. The CPU fallbacks of `mirrored`, `multi_worker` and `one_device` stay: the tests
train on them.
"""

import tensorflow as tf

from bert_tf.accelerators.replica_devices import describe_devices, device_type, replica_devices
from bert_tf.errors import InputError
from bert_tf.platforms.platforms_file import load_platforms

GPU_INSTALL = 'pip install ".[gpu]" (TensorFlow\'s CUDA libraries; the machine needs the NVIDIA driver)'
TPU_INSTALL = ("pip install -r requirements-tpu-vm.txt -f https://storage.googleapis.com/libtpu-tf-releases/"
               "index.html, then pip install --no-deps \"tensorflow-text==2.20.*\" .")


class WrongDeviceError(InputError):
    """The run was asked for a device this machine does not have (or a strategy that cannot use it).

    Example:
    >>> raise WrongDeviceError("--platform=a100_80gb is for GPUs, but this machine has CPU:0 only.")
    Traceback (most recent call last):
    bert_tf.training.device_check.WrongDeviceError: --platform=a100_80gb is for GPUs, but this machine has CPU:0 only.
    """


def found_devices():
    """What this process's TensorFlow sees, for a message: e.g. "1 CPU, no GPU, no TPU".

    >>> found_devices().startswith("1 CPU")
    True
    """
    counts = {kind: len(tf.config.list_physical_devices(kind)) for kind in ("CPU", "GPU", "TPU")}
    return ", ".join(f"{n} {kind}" if n else f"no {kind}" for kind, n in counts.items())


def no_tpu_error(tpu, cause):
    """The `WrongDeviceError` for `--strategy=tpu` when no TPU could be reached (`cause`: TensorFlow's words)."""
    first_line = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return WrongDeviceError(
        f"--strategy=tpu found no TPU (--tpu={tpu or ''}: {first_line[:160]}; this machine has {found_devices()}): "
        f"on a TPU VM install TensorFlow's TPU build ({TPU_INSTALL}) and pass --tpu=local; on a pod slice run on "
        f"worker 0 with --tpu=NAME and TPU_LOAD_LIBRARY=0 (docs/accelerators.md, Installing).")


def platform_device_type(device):
    """"TPU", "GPU" or None (CPU) for a platform's `device` key (a `device_peaks.DEVICES` key: TPUs are "tpu_*",
    every other entry is an NVIDIA GPU).

    >>> platform_device_type("tpu_v5e"), platform_device_type("h100_80gb"), platform_device_type(None)
    ('TPU', 'GPU', None)
    """
    if device is None:
        return None
    return "TPU" if device.startswith("tpu_") else "GPU"


def check_run_devices(recipe, strategy):
    """The checks a run makes before building anything: its `--platform`'s device and its jit scope, against the
    devices the strategy's replicas are on."""
    if recipe.platform:
        platforms = load_platforms()
        if recipe.platform not in platforms:
            raise InputError(f"platform={recipe.platform!r} is unknown: use one of {', '.join(sorted(platforms))}.")
        check_platform_devices(recipe.platform, platforms[recipe.platform].device, strategy)
    if recipe.jit_compile:
        check_jit_scope(recipe.jit_compile_scope, strategy)


def check_platform_devices(platform, device, strategy):
    """Raises `WrongDeviceError` unless the strategy's replicas run on the kind of device `platform` (whose
    platforms.yaml `device` is `device`) is for."""
    wanted = platform_device_type(device)
    if wanted is None:
        return
    devices = replica_devices(strategy)
    if all(device_type(d) == wanted for d in devices):
        return
    install = TPU_INSTALL if wanted == "TPU" else GPU_INSTALL
    how = "--strategy=tpu" if wanted == "TPU" else "--strategy=mirrored (one machine) or multi_worker"
    raise WrongDeviceError(
        f"--platform={platform} is for {wanted}s, but the run's replicas are on {describe_devices(devices)} (this "
        f"machine has {found_devices()}): on a {wanted} machine install {install} and run with {how}, or leave "
        f"out --platform.")


def check_jit_scope(scope, strategy):
    """Raises `WrongDeviceError` when `jit_compile_scope: step` meets a strategy that cannot compile the optimizer's
    update into each replica's step: MirroredStrategy and MultiWorkerMirroredStrategy do it only on GPUs (elsewhere
    the update needs `merge_call`, which TensorFlow cannot run inside a compiled function)."""
    if scope != "step" or not isinstance(strategy, (tf.distribute.MirroredStrategy,
                                                    tf.distribute.MultiWorkerMirroredStrategy)):
        return
    devices = replica_devices(strategy)
    if not all(device_type(d) == "GPU" for d in devices):
        raise WrongDeviceError(
            f"jit_compile_scope=step compiles the whole step, which {type(strategy).__name__} can do on GPUs only, "
            f"but its replicas are on {describe_devices(devices)}: use --set=jit_compile_scope=gradients, or install "
            f"{GPU_INSTALL} on a GPU machine.")

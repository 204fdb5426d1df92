"""The peak FLOP/s a run's MFU divides by, and where that figure comes from (printed in the training log).

Accelerators: the data-sheet peak of one replica's device (`device_peaks`), looked up by device kind, times the
replicas in sync; the host CPU of a TPU VM or GPU server is never the reference for an accelerator run. CPUs have
no data-sheet figure that holds on a shared machine, so a CPU run measures its own: the best of several short
repeats of a large matmul in the run's compute dtype (other processes only ever slow a repeat down, so the best
repeat is the steadiest estimate of what the cores can do), times the worker processes (the logical CPU devices of
one process share its cores, so they do not multiply it). An MFU above 100% is impossible: it is shown as 100%
with a warning that the peak read low.
"""

import dataclasses
import os
import time

import tensorflow as tf
from absl import logging

from bert_tf.accelerators.device_peaks import device_spec
from bert_tf.accelerators.replica_devices import device_type, replica_devices
from bert_tf.errors import InputError


@dataclasses.dataclass(frozen=True)
class Peak:
    """The peak FLOP/s of a whole run and where the figure comes from (printed in the training log).

    Attributes:
        flops_per_second: over all replicas (or all worker processes on CPUs).
        source: e.g. "tpu_v4 data sheet: 275 TFLOP/s bfloat16 x 32 replicas".
        measured: whether the figure was timed here (a CPU) rather than looked up.
    """

    flops_per_second: float
    source: str
    measured: bool = False

    @property
    def kind(self):
        """Where the figure comes from, in a few words for each log row: "tpu_v4 data sheet", "measured", "stated".

        >>> Peak(4e11, "stated: --peak_tflops=0.4").kind
        'stated'
        """
        return self.source.split(":")[0]


def compute_dtype_peak(spec, compute_dtype):
    """TFLOP/s of one `spec` device for matmuls in `compute_dtype` ("bfloat16", "float16" or "float32"), and the
    unit's name; float32 counts as TF32 while TensorFlow's TF32 execution is on and the device has TF32 units.

    Example:
    >>> compute_dtype_peak(device_spec("a100_80gb"), "bfloat16")
    (312.0, 'bfloat16')
    """
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    if compute_dtype == "float32" and spec.tensor_float32 and tf32:
        return spec.tensor_float32, "tensor_float32"
    value = getattr(spec, compute_dtype)
    if value is None:
        raise InputError(f"{spec.name} has no {compute_dtype} matrix units: use --mixed_precision=mixed_float16 "
                         f"or float32 on it.")
    return value, compute_dtype


def accelerator_kind(strategy):
    """The kind of accelerator the strategy's replicas run on: `devices_kind` of their own devices
    (`replica_devices`).

    Example:
    >>> accelerator_kind(tf.distribute.get_strategy()) is None  # on a CPU-only machine
    True
    """
    return devices_kind(replica_devices(strategy))


def devices_kind(devices):
    """The accelerator kind of replicas on `devices` (device names): for TPUs the TPU_ACCELERATOR_TYPE environment
    variable (set on GKE and by users; TF does not report a TPU's generation), for GPUs TensorFlow's name of the
    first replica's GPU; None on CPUs.

    Example:
    >>> devices_kind(["/job:localhost/replica:0/task:0/device:CPU:0"]) is None
    True
    """
    types = {device_type(d) for d in devices}
    if "TPU" in types:
        return os.environ.get("TPU_ACCELERATOR_TYPE") or "tpu (generation unknown)"
    if "GPU" in types:
        index = tf.DeviceSpec.from_string(next(d for d in devices if device_type(d) == "GPU")).device_index or 0
        gpus = tf.config.list_physical_devices("GPU")
        details = tf.config.experimental.get_device_details(gpus[min(index, len(gpus) - 1)]) if gpus else {}
        return details.get("device_name", "gpu (model unknown)")
    return None


def run_peak(strategy, num_replicas, num_workers, compute_dtype, accelerator=None, peak_tflops=None):
    """The `Peak` a run's MFU divides by.

    Args:
        strategy: the run's `tf.distribute.Strategy`.
        num_replicas: replicas in sync over all workers.
        num_workers: worker processes (each measures its own CPU peak on CPUs).
        compute_dtype: "bfloat16", "float16" or "float32".
        accelerator: the device kind when it cannot be detected (a key of `DEVICES` or a TPU accelerator type).
        peak_tflops: a stated peak over the whole run, used as given.

    Returns:
        A `Peak`, or None for an accelerator whose kind is unknown (no MFU is printed then, never a CPU figure).

    Example:
    >>> run_peak(tf.distribute.get_strategy(), 1, 1, "float32", peak_tflops=1.5).source
    'stated: --peak_tflops=1.5'
    """
    if peak_tflops:
        return Peak(peak_tflops * 1e12, f"stated: --peak_tflops={peak_tflops:g}")
    kind = accelerator or accelerator_kind(strategy)
    if kind is None:
        per_worker = measure_peak_flops(compute_dtype)
        return Peak(per_worker * num_workers,
                    f"measured: best of repeated {compute_dtype} matmuls on this CPU, {per_worker / 1e12:.3g} "
                    f"TFLOP/s x {num_workers} worker(s)", measured=True)
    spec = device_spec(kind)
    if spec is None:
        logging.warning("No peak FLOP rate is known for the accelerator %r: the log shows no MFU. Pass "
                        "--peak_tflops (all replicas together) to get one.", kind)
        return None
    per_replica, unit = compute_dtype_peak(spec, compute_dtype)
    return Peak(per_replica * 1e12 * num_replicas,
                f"{spec.name} data sheet: {per_replica:g} TFLOP/s {unit} x {num_replicas} replica(s)")


def measure_peak_flops(dtype="float32", size=1024, repeats=7, seconds_per_repeat=0.1):
    """FLOP/s of a [size, size] x [size, size] matmul chain on this process's CPU in `dtype`: the best of
    `repeats` timed repeats of about `seconds_per_repeat` each.

    Example:
    >>> measure_peak_flops(size=128, repeats=2, seconds_per_repeat=0.01) > 1e6
    True
    """
    with tf.device("/cpu:0"):
        a = tf.cast(tf.random.normal([size, size]), dtype)

        @tf.function
        def matmuls(x, n):
            for _ in tf.range(n):
                x = tf.matmul(x, a) * tf.cast(1.0 / size, dtype)
            return x

        matmuls(a, tf.constant(2)).numpy()  # trace and warm up
        n, elapsed = 2, 0.0
        while elapsed < seconds_per_repeat:
            n *= 2
            start = time.perf_counter()
            matmuls(a, tf.constant(n)).numpy()
            elapsed = time.perf_counter() - start
        best = elapsed
        for _ in range(repeats - 1):
            start = time.perf_counter()
            matmuls(a, tf.constant(n)).numpy()
            best = min(best, time.perf_counter() - start)
    return 2.0 * size ** 3 * n / best


def clipped_mfu(model_flops_per_second, peak):
    """(MFU, warning): the MFU capped at 1.0, with a warning when the measured rate exceeds the peak (the peak
    read low, e.g. a CPU under load while it was timed), else warning None.

    Example:
    >>> clipped_mfu(3e12, Peak(2e12, "measured", measured=True))[0]
    1.0
    """
    mfu = model_flops_per_second / peak.flops_per_second
    if mfu <= 1.0:
        return mfu, None
    return 1.0, (f"The model ran at {model_flops_per_second / 1e12:.3g} TFLOP/s, above the peak it is measured "
                 f"against ({peak.flops_per_second / 1e12:.3g} TFLOP/s, {peak.source}): that peak reads low, so the "
                 f"MFU is shown as 100%. Pass --peak_tflops with the hardware's figure for a true MFU.")

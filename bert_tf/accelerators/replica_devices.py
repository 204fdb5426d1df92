"""Which devices a strategy's replicas run on: what the MFU's peak is looked up for and what a run checks against
its `--platform` before the first step.

`strategy.extended.worker_devices` names them (TPU cores, GPUs or CPUs, on this worker's hosts). Tensors made
outside `strategy.run` are no guide: on the classic TPU stack they sit on the host's CPU.
"""

import tensorflow as tf


def replica_devices(strategy):
    """The device names of this worker's replicas; for the default strategy, which has no device list, the device
    TensorFlow places its ops on (the first GPU, else the CPU).

    Example:
    >>> replica_devices(tf.distribute.OneDeviceStrategy("/cpu:0"))
    ('/job:localhost/replica:0/task:0/device:CPU:0',)
    """
    try:
        return tuple(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy
        gpus = tf.config.list_logical_devices("GPU")
        return (gpus[0].name if gpus else "/job:localhost/replica:0/task:0/device:CPU:0",)


def device_type(name):
    """"TPU", "GPU" or "CPU" for a device name.

    >>> device_type("/job:worker/replica:0/task:1/device:TPU:3")
    'TPU'
    """
    return tf.DeviceSpec.from_string(name).device_type.upper()


def describe_devices(names):
    """A short list of device names for a message: "CPU:0" or "2 x GPU (GPU:0, GPU:1)".

    >>> describe_devices(["/job:localhost/replica:0/task:0/device:CPU:0"])
    'CPU:0'
    """
    short = [f"{device_type(n)}:{tf.DeviceSpec.from_string(n).device_index or 0}" for n in names]
    if len(short) == 1:
        return short[0]
    types = sorted({device_type(n) for n in names})
    return f"{len(short)} x {'/'.join(types)} ({', '.join(short[:4])}{', ...' if len(short) > 4 else ''})"

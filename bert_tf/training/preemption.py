"""SIGTERM, the notice that TPU and cloud VMs (and Kubernetes, Slurm) give before they stop a job.

The handler only raises a flag; the host loop checks it after every `iterations_per_loop` call, saves a checkpoint
and returns. (`tf.distribute.experimental.PreemptionCheckpointHandler` does this for multi-worker and TPU
clusters only; this works with every `--strategy`, and the loop synchronises the flag across workers itself.)
"""

import signal
import threading

from absl import logging


class SigtermFlag:
    """A context manager that turns SIGTERM into a flag while it is active (then restores the old handler).

    Installed only in the main thread (Python delivers signals there); elsewhere it stays unset.

    Example:
    >>> with SigtermFlag() as preempted:
    ...     while not preempted.is_set():
    ...         train_some_steps()
    """

    def __init__(self):
        self._event = threading.Event()
        self._previous = None

    def is_set(self):
        return self._event.is_set()

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None
        return False

    def _handle(self, signum, frame):
        logging.warning("SIGTERM received: saving a checkpoint after the current loop, then stopping.")
        self._event.set()

"""SIGTERM, the notice that TPU and cloud VMs (and Kubernetes, Slurm) give before they stop a job, and SIGINT (Ctrl-C),
a user's: both save a checkpoint after the current step and stop; a second SIGINT ends the process at once
(exit 130), without saving.

Python runs a signal handler only when the main thread returns to the interpreter, which it does not do while
a `tf.function` loop of `iterations_per_loop` steps runs. So the handler is only there to make the signal
catchable; the signal number also reaches a pipe (`signal.set_wakeup_fd`) written from C at once, and a watcher
thread reading that pipe sets a `tf.Variable` that the in-graph loop reads before each step. The loop finishes
its current step and returns; the controller saves a checkpoint and stops.
"""

import os
import signal
import sys
import threading

from absl import logging

# Exit status of a process stopped by SIGINT (128 + 2), as shells report it.
EXIT_INTERRUPTED = 130
_WATCHED = (signal.SIGTERM, signal.SIGINT)


class PreemptionWatcher:
    """A context manager turning SIGTERM or SIGINT into `flag.assign(True)` within the running loop, and into
    `requested()`; `signal_name` says which came first. A second SIGINT (Ctrl-C pressed again while the checkpoint
    is being written) ends the process at once with exit 130.

    Installed only in the main thread (Python delivers signals there); elsewhere it never fires. The previous
    handler and wakeup fd are restored on exit.

    Args:
        flag: a boolean `tf.Variable` the training loop reads each step (`Trainer.stop_requested`), or None.

    >>> with PreemptionWatcher() as preemption:
    ...     preemption.requested()
    False
    """

    def __init__(self, flag=None):
        self.flag = flag
        self._event = threading.Event()
        self._previous_handler = self._previous_fd = None
        self._read_fd = self._write_fd = None
        self._thread = None
        self.signal_name = None

    def requested(self):
        return self._event.is_set()

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)
        self._previous_handler = {s: signal.signal(s, lambda signum, frame: None) for s in _WATCHED}
        self._previous_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, name="preemption-watcher", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is None:
            return False
        signal.set_wakeup_fd(self._previous_fd)
        for s, handler in self._previous_handler.items():
            signal.signal(s, handler)
        os.close(self._write_fd)  # the watcher's read returns end-of-file and the thread ends
        self._thread.join()
        os.close(self._read_fd)
        self._thread = None
        return False

    def _watch(self):
        while True:
            data = os.read(self._read_fd, 64)
            if not data:
                return
            for signum in data:
                if signum not in _WATCHED:
                    continue
                name = signal.Signals(signum).name
                if not self._event.is_set():
                    logging.warning("%s received: saving a checkpoint after the current step, then stopping%s.",
                                    name, " (Ctrl-C again stops at once, without saving)" if signum == signal.SIGINT
                                    else "")
                    self.signal_name = name
                    self._event.set()
                    if self.flag is not None:
                        self.flag.assign(True)
                elif signum == signal.SIGINT:
                    sys.stderr.write("Interrupted again (Ctrl-C): stopped at once, without saving; the latest "
                                     "checkpoint stays the last one written.\n")
                    sys.stderr.flush()
                    os._exit(EXIT_INTERRUPTED)

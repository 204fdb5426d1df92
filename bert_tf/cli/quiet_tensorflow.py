"""TensorFlow started quietly: its C++ start-up lines (oneDNN, CUDA stub, "failed call to cuInit" on a machine
without a GPU) are printed when it is imported and its devices are first listed, before TF_CPP_MIN_LOG_LEVEL is read,
so `start_tensorflow_quietly` does both with file descriptor 2 pointed at a temporary file (its lines are printed if
the import fails), and filters the INFO lines TensorFlow's Python modules log at every checkpoint and export.
`BERT_TF_TF_LOGS=1` shows everything as TensorFlow prints it.
"""

import contextlib
import logging as pylogging
import os
import sys
import tempfile

from absl import logging

SHOW_TF_LOGS_ENV = "BERT_TF_TF_LOGS"

_tensorflow_devices = None


@contextlib.contextmanager
def _stderr_captured():
    """Points file descriptor 2 (C++ and Python stderr) at a temporary file; yields the file."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


@contextlib.contextmanager
def others_output_hidden():
    """Hides what the block and the processes it starts print on stderr (file descriptor 2, which child processes
    inherit): for a command whose workers each import TensorFlow and log their runner's chatter (Beam's). When
    the block fails, what was printed is shown with --verbosity=debug (else the frame's one line stands alone);
    `BERT_TF_TF_LOGS=1` shows it as it comes.

    Example:
    >>> with others_output_hidden():  # doctest: +SKIP
    ...     pipeline.run().wait_until_finish()
    """
    if os.environ.get(SHOW_TF_LOGS_ENV) == "1":
        yield
        return
    error = None
    with _stderr_captured() as captured:
        try:
            yield
        except BaseException as caught:
            error = caught
            captured.seek(0)
            lines = captured.read()
    if error is not None:
        if logging.get_verbosity() >= logging.DEBUG:
            sys.stderr.buffer.write(lines)
            sys.stderr.flush()
        raise error


def start_tensorflow_quietly():
    """Imports TensorFlow and lists its devices with the C++ start-up lines hidden (see the module docstring).

    Example:
    >>> start_tensorflow_quietly()  # doctest: +SKIP
    """
    global _tensorflow_devices
    if _tensorflow_devices is not None:
        return
    if os.environ.get(SHOW_TF_LOGS_ENV) == "1":
        import tensorflow as tf
        _tensorflow_devices = tf.config.list_physical_devices()
        return
    # TensorFlow's C++ INFO and WARNING lines after start-up ("Local rendezvous is aborting", ...) are noise too;
    # its errors still show.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    lines = b""
    try:
        with _stderr_captured() as captured:
            try:
                import tensorflow as tf
                _tensorflow_devices = tf.config.list_physical_devices()
            finally:
                captured.seek(0)
                lines = captured.read()
    except BaseException:
        # What TensorFlow printed explains why its import failed.
        sys.stderr.buffer.write(lines)
        sys.stderr.flush()
        raise
    hide_tensorflow_info_logs(os.path.dirname(tf.__file__))


class _TensorFlowInfoFilter(pylogging.Filter):
    """Lets through what is not an INFO line of a module inside `package_dir`."""

    def __init__(self, package_dir):
        super().__init__()
        self.package_dir = os.path.join(package_dir, "")

    def filter(self, record):
        return record.levelno >= pylogging.WARNING or not record.pathname.startswith(self.package_dir)


def hide_tensorflow_info_logs(package_dir):
    """Drops the INFO lines TensorFlow's Python modules log at every checkpoint and export ("Assets written to",
    "Writing fingerprint", "Sharding callback duration", "Function ... contains input name(s) ... renamed"): they
    come through absl's logger (the one the commands log their own progress with) or the "tensorflow" logger,
    so a filter on both keeps our INFO lines and TensorFlow's warnings. `BERT_TF_TF_LOGS=1` keeps them all.

    Example:
    >>> hide_tensorflow_info_logs("/usr/lib/python3/site-packages/tensorflow")  # doctest: +SKIP
    """
    for logger in (logging.get_absl_logger(), pylogging.getLogger("tensorflow")):
        if not any(isinstance(f, _TensorFlowInfoFilter) for f in logger.filters):
            logger.addFilter(_TensorFlowInfoFilter(package_dir))


def describe_devices():
    """One line naming the devices TensorFlow sees.

    Example:
    >>> describe_devices()  # doctest: +SKIP
    'running on the CPU (no GPU found)'
    """
    start_tensorflow_quietly()
    counts = {}
    for device in _tensorflow_devices:
        counts[device.device_type] = counts.get(device.device_type, 0) + 1
    accelerators = [f"{n} {kind}" for kind, n in counts.items() if kind != "CPU"]
    if not accelerators:
        return "running on the CPU (no GPU found)"
    return "running on " + ", ".join(accelerators) + " and the CPU"

"""Exit codes of the `bert-*` commands, and which one an exception that ended a command means.

    0    success
    2    bad input: a flag, file, directory or config that cannot be used as given; one line on stderr names the
         cause (with the value or path) and the fix
    1    an internal failure (a bug): one line, and the traceback with --verbosity=debug (or -v 1)
    3    a training run stopped on a non-finite loss (the latest checkpoint stays the last good one)
    143  stopped by SIGTERM after writing a checkpoint (re-running resumes)
    130  stopped by SIGINT (Ctrl-C), after writing a checkpoint where the command trains

The exit code says whose fault it was. Bad input (exit 2) is what the user can fix: `bert_tf.errors.InputError` (and
its subclasses), raised by library code where it detects the bad flag, file, config or directory, absl's flag
errors, an `OSError` from the OS on a path the user gave (no such file, a directory, no space, permissions), a
missing optional package, and a TensorFlow error reading a user's file (a corrupt TFRecord). Anything else, a plain
`ValueError` included, is an internal failure (exit 1): one line with the hint to rerun with --verbosity=debug for
the traceback.
"""

import builtins
import errno
import re
import sys

from absl import app, flags

from bert_tf.errors import InputError, NonFiniteLossError

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_NON_FINITE = 3
EXIT_INTERRUPTED = 130
EXIT_PREEMPTED = 143

UsageError = app.UsageError

# What an OS error on a path means to the user, and what to do about it.
_OS_ERROR_FIXES = {
    errno.ENOENT: "check the path (and that its folder exists)",
    errno.EISDIR: "pass a file, or a glob of the files inside the directory such as 'DIR/*'",
    errno.ENOTDIR: "a part of the path is a file, not a directory: choose another path",
    errno.EACCES: "change its permissions or choose another path",
    errno.EPERM: "change its permissions or choose another path",
    errno.ENOSPC: "free some space or write to another disk",
    errno.EDQUOT: "free some space or write to another disk",
    errno.EROFS: "write to a writable location",
    errno.EEXIST: "remove it or choose a new path",
    errno.ENOTEMPTY: "empty it or choose a new path",
    errno.ENAMETOOLONG: "choose a shorter path",
}

# TensorFlow errors from reading or writing the user's files; tf.io.gfile reports OS errors as these classes, with
# the OS's words in the message.
_TF_INPUT_ERRORS = {
    "DataLossError": "the file is damaged, cut short or not a TFRecord/checkpoint (or compressed differently than "
                     "read): recreate it or leave it out of the input",
    "NotFoundError": "check the path (and that its folder exists)",
    "PermissionDeniedError": "change its permissions or choose another path",
    "AlreadyExistsError": "remove it or choose a new path",
}

_TF_OS_WORDS = {
    "Is a directory": _OS_ERROR_FIXES[errno.EISDIR],
    "Not a directory": _OS_ERROR_FIXES[errno.ENOTDIR],
    "is not a directory": _OS_ERROR_FIXES[errno.ENOTDIR],
    "No space left on device": _OS_ERROR_FIXES[errno.ENOSPC],
    "Read-only file system": _OS_ERROR_FIXES[errno.EROFS],
}


def classify(error):
    """(exit code, one-line message) for an exception that ended a command.

    Example:
    >>> classify(InputError("--vocab_size=0 must be positive: pass e.g. --vocab_size=30522."))
    (2, '--vocab_size=0 must be positive: pass e.g. --vocab_size=30522.')
    >>> classify(IsADirectoryError(21, "Is a directory", "corpus"))[1]
    "corpus: Is a directory: pass a file, or a glob of the files inside the directory such as 'DIR/*'."
    >>> classify(KeyError("layer_0"))[0]
    1
    >>> classify(ValueError("No gradient reaches layer_0"))  # a bug, not the user's fault
    (1, 'internal error: ValueError: No gradient reaches layer_0 (a bug: rerun with --verbosity=debug for the ...')
    """
    if isinstance(error, NonFiniteLossError):
        return EXIT_NON_FINITE, _one_line(str(error))
    if isinstance(error, (InputError, UsageError, flags.Error)):
        return EXIT_BAD_INPUT, _one_line(str(error))
    if isinstance(error, ModuleNotFoundError):
        return EXIT_BAD_INPUT, f"{error}: install it (pip install {error.name}) to use this option."
    if isinstance(error, OSError):
        return _classify_os_error(error)
    tf_error = _classify_tensorflow_error(error)
    if tf_error:
        return tf_error
    return _internal(error)


def _classify_os_error(error):
    if error.errno is None:  # not from the OS (ours are InputErrors, caught above): a bug
        return _internal(error)
    fix = _OS_ERROR_FIXES.get(error.errno)
    if fix is None:
        return _internal(error)
    where = f"{error.filename}: " if error.filename is not None else ""
    return EXIT_BAD_INPUT, f"{where}{error.strerror}: {fix}."


def _internal(error):
    return EXIT_INTERNAL, (f"internal error: {type(error).__name__}: {_one_line(str(error))} (a bug: rerun with "
                           f"--verbosity=debug for the traceback and report it).")


def _classify_tensorflow_error(error):
    tf = sys.modules.get("tensorflow")
    if tf is None or not isinstance(error, tf.errors.OpError):
        return None
    message = _tensorflow_message(error.message)
    raised_inside = _python_error_in(message)
    if raised_inside is not None:
        return classify(raised_inside)
    fix = _TF_INPUT_ERRORS.get(type(error).__name__)
    if fix is None:
        fix = next((fix for words, fix in _TF_OS_WORDS.items() if words in message), None)
    if fix is None:
        return None
    return EXIT_BAD_INPUT, f"{message}: {fix}."


def _python_error_in(message):
    """The Python exception a tf.data generator or py_function raised, rebuilt from its TensorFlow error message
    ("IsADirectoryError: [Errno 21] Is a directory: 'corpus'"), when it is one the frame knows how to explain."""
    match = re.match(r"(\w+): (.*)", message)
    if not match:
        return None
    name, text = match.groups()
    if name == InputError.__name__:
        return InputError(text)
    kind = getattr(builtins, name, None)
    if not (isinstance(kind, type) and issubclass(kind, OSError)):
        return None
    os_error = re.match(r"\[Errno (\d+)\] (.*?): '(.*)'$", text)
    if os_error:
        return kind(int(os_error.group(1)), os_error.group(2), os_error.group(3))
    return kind(text)


def _tensorflow_message(message):
    """The first line of a TensorFlow error message, the part a user can read."""
    line = next((line for line in message.splitlines() if line.strip()), message)
    return _one_line(line).rstrip(".")


def _one_line(message):
    """The message on one line, without TensorFlow's function names, op names and graph nodes (which library code
    that wraps a TensorFlow error may have passed on)."""
    message = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", message)
    message = re.sub(r"\s*\[\[\{\{node [^]]*\]\]|\s*\[Op:[^]]*\]( name: ?)?", "", message)
    return " ".join(message.split())


def error_line(program, code, message):
    """The one line a command ends with: `PROGRAM: error: MESSAGE`, or `PROGRAM: MESSAGE` for Ctrl-C.

    >>> error_line("bert-vocab", EXIT_BAD_INPUT, "--output_file is required.")
    'bert-vocab: error: --output_file is required.'
    """
    return f"{program}: error: {message}" if code != EXIT_INTERRUPTED else f"{program}: {message}"

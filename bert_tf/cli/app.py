"""The frame every `bert-*` command runs in: flag parsing, exit codes, one-line errors and a quiet TensorFlow start-up.

Exit codes (the same for every command):
    0    success
    2    bad input: a flag, file, directory or config that cannot be used as given; one line on stderr names the
         cause (with the value or path) and the fix
    1    an internal failure (a bug): one line, and the traceback with --verbosity=debug (or -v 1)
    3    a training run stopped on a non-finite loss (the latest checkpoint stays the last good one)
    143  stopped by SIGTERM after writing a checkpoint (re-running resumes)
    130  interrupted with Ctrl-C

A command is a module under bert_tf/cli/ with absl flags and a `main(argv)`; its console script calls
`app.run(main, required_flags=[...])`. The module imports no TensorFlow at its top (`tests/test_cli_start.py` runs
every command with TensorFlow made unimportable): the frame parses the flags, answers `--help` (the command's own
flags, exit 0), runs the command's `check_inputs` (what can be checked without TensorFlow: a missing input file),
and only then starts TensorFlow and calls `main`.

The exit code says whose fault it was. Bad input (exit 2) is what the user can fix: `bert_tf.errors.InputError` (and
its subclasses), raised by library code where it detects the bad flag, file, config or directory, absl's flag
errors, an `OSError` from the OS on a path the user gave (no such file, a directory, no space, permissions), a
missing optional package, and a TensorFlow error reading a user's file (a corrupt TFRecord). Anything else, a plain
`ValueError` included, is an internal failure (exit 1): one line with the hint to rerun with --verbosity=debug for
the traceback. `main` may return an exit code (e.g. `EXIT_PREEMPTED`).

TensorFlow prints its C++ start-up lines (oneDNN, CUDA stub, "failed call to cuInit" on a machine without a GPU)
when it is imported and its devices are first listed. The frame does both through `start_tensorflow_quietly()`
before `main` runs, with file descriptor 2 pointed at a temporary file:
TF_CPP_MIN_LOG_LEVEL=3 alone does not hide these lines, because they are written before TensorFlow reads it. The
captured lines are printed if the import fails; `BERT_TF_TF_LOGS=1` shows them as TensorFlow prints them.
"""

import builtins
import contextlib
import errno
import functools
import logging as pylogging
import os
import re
import sys
import tempfile
import textwrap
import traceback

from absl import app, flags, logging

from bert_tf.errors import InputError, NonFiniteLossError

FLAGS = flags.FLAGS

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_NON_FINITE = 3
EXIT_INTERRUPTED = 130
EXIT_PREEMPTED = 143

SHOW_TF_LOGS_ENV = "BERT_TF_TF_LOGS"

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

# absl's help flags print and exit 1, and name only the flags of the file Python ran (a console script's has none):
# the frame answers them itself, with the command's own flags, and exits 0.
_HELP_FLAGS = ("--help", "-help", "-h", "-?", "--helpshort", "-helpshort", "--helpfull", "-helpfull")
_FULL_HELP_FLAGS = ("--helpfull", "-helpfull")
_HELP_WIDTH = 100

# absl's --verbosity takes integers; the contract's --verbosity=debug means 1.
_VERBOSITY_NAMES = {"debug": "1", "info": "0", "warning": "-1", "error": "-2", "fatal": "-3"}

_tensorflow_devices = None


def program_name(main):
    """The console script of the command whose `main` this is.

    Example:
    >>> from bert_tf.cli import create_pretraining_data
    >>> program_name(create_pretraining_data.main)
    'bert-create-pretraining-data'
    """
    module = main.__module__
    if module == "__main__":  # run as `python -m bert_tf.cli.<command>`
        module = sys.modules["__main__"].__spec__.name
    return "bert-" + module.rsplit(".", 1)[-1].replace("_", "-")


def run(main, *, required_flags=(), pass_on_unknown_flags=False, check_inputs=None):
    """Parses the flags, runs `main(argv)` and ends the process with the exit code the outcome means.

    `pass_on_unknown_flags=True` hands the flags absl does not know to `main` in `argv` (for a command that passes
    them on, as the Beam pipeline passes its runner's options); otherwise they are an error. `check_inputs()`, when
    given, runs after the flags are parsed and before TensorFlow starts: it raises for an input that cannot be used
    (a missing file), so that the user hears of it at once.

    Example:
    >>> def main(argv):
    ...     print("hello")
    >>> run(main)  # doctest: +SKIP
    """
    program = program_name(main)
    flags.mark_flags_as_required(list(required_flags))
    app.run(functools.partial(_run_main, main, program, check_inputs),
            flags_parser=functools.partial(parse_flags, program, known_only=pass_on_unknown_flags))


def parse_flags(program, argv, known_only=False):
    """absl's flag parsing, with a flag error as one line and exit code 2 (absl prints two lines and exits 1).

    Extra positional arguments are refused: they are usually an unquoted glob the shell expanded.
    """
    argv = _with_verbosity_numbers(argv)
    help_flag = _help_flag(argv)
    if help_flag:
        print(command_help(program, full=help_flag in _FULL_HELP_FLAGS), end="")
        sys.exit(EXIT_OK)
    try:
        rest = FLAGS(argv, known_only=known_only)
    except flags.Error as error:
        _exit(program, EXIT_BAD_INPUT, _flag_error_message(error))
    if len(rest) > 1 and not known_only:
        _exit(program, EXIT_BAD_INPUT,
              f"unexpected arguments {rest[1:]}: every input is a flag (--name=value); quote globs so the shell "
              f"does not expand them (--input_file='dir/*.txt') and join several with commas.")
    return rest


def _help_flag(argv):
    """The help flag in `argv` (before a `--` that ends the flags), or None."""
    for arg in argv[1:]:
        if arg == "--":
            return None
        if arg in _HELP_FLAGS:
            return arg
    return None


def command_help(program, full=False):
    """What `--help` prints: the command's description and examples (its module docstring), then its own flags in
    the groups its module's `HELP_GROUPS` ({title: [flag names]}) names, the rest after them; `full` adds absl's
    flags (logging, verbosity).

    Example:
    >>> print(command_help("bert-vocab"))  # doctest: +SKIP
    """
    command = sys.modules.get(_command_module(program)) or sys.modules["__main__"]
    own = {flag.name: flag for module, module_flags in FLAGS.flags_by_module_dict().items()
           if not module.startswith("absl") for flag in module_flags}
    groups = dict(getattr(command, "HELP_GROUPS", {}))
    grouped = {name for names in groups.values() for name in names}
    rest = sorted(name for name in own if name not in grouped)
    if rest:
        groups["other flags" if grouped else f"{program} flags"] = rest
    lines = [f"usage: {program} [--flag=value ...]", ""]
    if command.__doc__:
        lines += [command.__doc__.strip(), ""]
    for title, names in groups.items():
        lines.append(f"{title}:")
        lines += [_flag_line(own[name]) for name in names if name in own]
        lines.append("")
    if full:
        for module, module_flags in sorted(FLAGS.flags_by_module_dict().items()):
            if module.startswith("absl"):
                lines += [f"absl flags ({module}):", *(_flag_line(f) for f in module_flags), ""]
    else:
        lines.append("--helpfull also lists absl's flags (logging; --verbosity=debug shows tracebacks).")
    return "\n".join(lines) + "\n"


def _command_module(program):
    return "bert_tf.cli." + program[len("bert-"):].replace("-", "_")


def _flag_line(flag):
    text = f"--{flag.name}"
    if flag.short_name:
        text += f" (-{flag.short_name})"
    text += f": {' '.join(flag.help.split())}"
    if flag.default not in (None, [], ()):
        default = str(flag.default).lower() if isinstance(flag.default, bool) else flag.default
        text += f" (default: {default})"
    return textwrap.fill(text, width=_HELP_WIDTH, initial_indent="  ", subsequent_indent="      ")


def _with_verbosity_numbers(argv):
    out = list(argv)
    for i, arg in enumerate(out):
        for prefix in ("--verbosity=", "-v="):
            if arg.startswith(prefix) and arg[len(prefix):].lower() in _VERBOSITY_NAMES:
                out[i] = prefix + _VERBOSITY_NAMES[arg[len(prefix):].lower()]
        if arg in ("--verbosity", "-v") and i + 1 < len(out) and out[i + 1].lower() in _VERBOSITY_NAMES:
            out[i + 1] = _VERBOSITY_NAMES[out[i + 1].lower()]
    return out


def _flag_error_message(error):
    required = re.match(r"flag --(\w+)=None: Flag --\w+ must have a value other than None", str(error))
    if required:
        return f"--{required.group(1)} is required: pass --{required.group(1)}=... (--helpshort lists the flags)."
    return f"{error} (--helpshort lists the flags)."


def _run_main(main, program, check_inputs, argv):
    try:
        if check_inputs is not None:
            check_inputs()
        print(f"{program}: {describe_devices()}", file=sys.stderr, flush=True)
        return main(argv)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _exit(program, EXIT_INTERRUPTED, "interrupted.")
    except Exception as error:  # every failure ends in one line and an exit code
        if logging.get_verbosity() >= logging.DEBUG:
            traceback.print_exc()
        _exit(program, *classify(error))


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


def _exit(program, code, message):
    print(f"{program}: error: {message}" if code != EXIT_INTERRUPTED else f"{program}: {message}", file=sys.stderr,
          flush=True)
    sys.exit(code)


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

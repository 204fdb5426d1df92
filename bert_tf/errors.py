"""The exceptions that decide how a command ends, defined at the bottom of the package so that every layer can raise
them and the command frame can catch them without importing TensorFlow.

`bert_tf.cli.exit_codes.classify` turns `InputError` (and its subclasses) into exit status 2 with its message on one
line and `NonFiniteLossError` into exit status 3; a plain `ValueError` is an internal failure, exit status 1. See
docs/architecture.md for the exit codes.
"""


class InputError(ValueError):
    """Bad input from the user: a flag, file, config or directory that cannot be used as given.

    The message is the whole story the user reads: what was wrong (with the value or path) and how to fix it.

    Example:
    >>> raise InputError("--vocab_size=0 must be positive: pass e.g. --vocab_size=30522.")
    Traceback (most recent call last):
    bert_tf.errors.InputError: --vocab_size=0 must be positive: pass e.g. --vocab_size=30522.
    """


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or Inf; the run stopped without saving that state.

    Example:
    >>> isinstance(NonFiniteLossError("loss nan at step 7"), RuntimeError)
    True
    """


class InputFileNotFoundError(InputError, FileNotFoundError):
    """A file or directory the user named does not exist (or lacks a file it must hold); also a `FileNotFoundError`,
    so callers that catch that keep working.

    Example:
    >>> isinstance(InputFileNotFoundError("vocab_file 'v.txt' does not exist: pass a WordPiece vocab."), OSError)
    True
    """


class InputIsADirectoryError(InputError, IsADirectoryError):
    """A path the user passed as a file is a directory; also an `IsADirectoryError`.

    Example:
    >>> raise InputIsADirectoryError("vocab_file 'model' is a directory: pass the vocab file in it (vocab.txt).")
    Traceback (most recent call last):
    bert_tf.errors.InputIsADirectoryError: vocab_file 'model' is a directory: pass the vocab file in it (vocab.txt).
    """


class OutputExistsError(InputError, FileExistsError):
    """An output the user named already holds something that must not be replaced; also a `FileExistsError`.

    Example:
    >>> isinstance(OutputExistsError("out already holds a checkpoint: pass a new --output directory."), InputError)
    True
    """

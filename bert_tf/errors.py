"""The exceptions that decide how a command ends, defined at the bottom of the package so that every layer can raise
them and `bert_tf.cli.app` can catch them without importing TensorFlow.

`bert_tf.cli.app.run` turns `InputError` (and any `ValueError`) into exit status 2 with its message on one line,
and `NonFiniteLossError` into exit status 3. See docs/architecture.md for the exit codes.
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

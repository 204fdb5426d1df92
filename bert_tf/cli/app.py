"""The frame every `bert-*` command runs in.

A command is a module under bert_tf/cli/ with absl flags and a `main(argv)`; its console script calls
`app.run(main, required_flags=[...])`. The module imports no TensorFlow at its top (`tests/test_cli_start.py` runs
every command with TensorFlow made unimportable): the frame parses the flags and answers `--help`
(`flag_parsing`), runs the command's `check_inputs` (what can be checked without TensorFlow: a missing input file),
starts TensorFlow quietly and prints the devices it runs on (`quiet_tensorflow`), calls `main`, and ends the process
with the exit code the outcome means, an error as one line (`exit_codes`). `main` may return an exit code (e.g.
`EXIT_PREEMPTED`).
"""

import functools
import sys
import traceback

from absl import app, flags, logging

from bert_tf.cli.exit_codes import EXIT_INTERRUPTED, classify, exit_with
from bert_tf.cli.flag_parsing import parse_flags
from bert_tf.cli.quiet_tensorflow import describe_devices, start_tensorflow_quietly


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
    if "tensorflow" in sys.modules:
        # Imported before the command ran (a script that calls `run()`): TensorFlow's import queued an absl
        # callback that lists the devices as absl starts, which would print the C++ start-up lines ("failed call
        # to cuInit"). Listing them quietly now leaves that callback nothing to print.
        start_tensorflow_quietly()
    app.run(functools.partial(_run_main, main, program, check_inputs),
            flags_parser=functools.partial(parse_flags, program, known_only=pass_on_unknown_flags))


def _run_main(main, program, check_inputs, argv):
    try:
        if check_inputs is not None:
            check_inputs()
        print(f"{program}: {describe_devices()}", file=sys.stderr, flush=True)
        return main(argv)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        exit_with(program, EXIT_INTERRUPTED, "interrupted.")
    except Exception as error:  # every failure ends in one line and an exit code
        if logging.get_verbosity() >= logging.DEBUG:
            traceback.print_exc()
        exit_with(program, *classify(error))

"""The one way a `bert-*` command runs, for its console script and for the tests: `run_command`.

A command is a module under bert_tf/cli/ with a `COMMAND` (`bert_tf.cli.command.Command`: its configuration and
its `main(config)`); its console script calls `run(COMMAND)`, which is `run_command(COMMAND, sys.argv,
console=True)` under absl's `app.run`. The module imports no TensorFlow at its top (`tests/test_cli_start.py` runs
every command with TensorFlow made unimportable): `run_command` answers `--help` and parses the flags
(`flag_parsing`), composes and checks the configuration (`command.compose`: what can be checked without
TensorFlow, such as a missing input file, ends the run before TensorFlow starts), calls `main`, and returns the exit
code the outcome means, an error as one line (`exit_codes`).

`console=True` adds what only a process of the command's own does: TensorFlow started quietly, with one line naming
the devices before `main`, and a run stopped by a signal (130, 143) after saving its work ended at once, without
TensorFlow's slow teardown. The process then exits with the code.
"""

import os
import sys
import traceback

from absl import app, flags, logging

from bert_tf.cli.command import compose
from bert_tf.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_PREEMPTED, classify, error_line
from bert_tf.cli.flag_parsing import command_help, flag_error_message, help_asked, parse_command_line
from bert_tf.cli.quiet_tensorflow import describe_devices, start_tensorflow_quietly


def run_command(command, argv, stderr=None, console=False):
    """Runs `command` with `argv` (argv[0] is the program) in this process and returns the exit code: `--help`
    prints the command's flags (0); otherwise the flags are parsed, the configuration composed and checked, and
    `main` run. An error prints the one line a user sees (`bert-x: error: ...`) to `stderr` (default: sys.stderr)
    and its code is returned (2 bad input, 1 internal, 3 non-finite loss, 130 Ctrl-C).

    `console` (a console script's process): TensorFlow is started quietly and a line names the devices before
    `main`, and exit codes 130 and 143 end the process at once.

    Example:
    >>> from bert_tf.cli import evaluate
    >>> import io
    >>> out = io.StringIO()
    >>> run_command(evaluate.COMMAND, ["bert-evaluate", "--model_dir=missing", "--eval_input_file=x"], out)
    2
    >>> print(out.getvalue().strip())
    bert-evaluate: error: --model_dir missing does not exist or is not a directory: pass a directory written by \
bert-pretrain or bert-convert.
    """
    stderr = stderr or sys.stderr
    try:
        help_flag = help_asked(argv)
        if help_flag:
            print(command_help(command, help_flag), end="")
            return EXIT_OK
        flag_values, unknown = parse_command_line(command, argv)
        config = compose(command, flag_values, unknown)
        if console:
            print(f"{command.program}: {describe_devices()}", file=stderr, flush=True)
        code = command.main(config)
        code = EXIT_OK if code is None else code
    except KeyboardInterrupt:
        code = _report(command.program, EXIT_INTERRUPTED, "interrupted.", stderr)
    except flags.Error as error:
        code = _report(command.program, EXIT_BAD_INPUT, flag_error_message(error), stderr)
    except Exception as error:  # every failure ends in one line and an exit code
        if logging.get_verbosity() >= logging.DEBUG:
            traceback.print_exc()
        code = _report(command.program, *classify(error), stderr)
    if console and code in (EXIT_INTERRUPTED, EXIT_PREEMPTED):
        # The checkpoint and logs are written. TensorFlow's teardown of its thread pools at interpreter exit can
        # take a good part of a preemption notice on a loaded machine: skip it.
        logging.flush()
        sys.stdout.flush()
        stderr.flush()
        os._exit(code)
    return code


def run(command):
    """The console script of `command`: `run_command(command, sys.argv, console=True)` under absl's `app.run`
    (absl's logging, its fault handler), then the process exits with the code.

    Example:
    >>> from bert_tf.cli import vocab
    >>> run(vocab.COMMAND)  # doctest: +SKIP
    """
    if "tensorflow" in sys.modules:
        # Imported before the command ran (a script that calls `run()`): TensorFlow's import may have queued absl
        # callbacks that list the devices as absl starts, which would print the C++ start-up lines ("failed call
        # to cuInit"). Listing them quietly now leaves those callbacks nothing to print.
        start_tensorflow_quietly()
    app.run(lambda argv: run_command(command, argv, console=True), flags_parser=_parsed_later)


def _parsed_later(argv):
    """absl's flags are parsed by `run_command`, with the command's own; absl only needs them marked parsed."""
    flags.FLAGS.mark_as_parsed()
    return argv


def _report(program, code, message, stderr):
    """Prints the command's last line (`error_line`) to `stderr` and returns `code`."""
    print(error_line(program, code, message), file=stderr, flush=True)
    return code

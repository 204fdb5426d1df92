"""The frame every `bert-*` console script runs in.

A command is a module under bert_tf/cli/ with a `COMMAND` (`bert_tf.cli.command.Command`: its configuration and
its `main(config)`); its console script calls `app.run(COMMAND)`. The module imports no TensorFlow at its top
(`tests/test_cli_start.py` runs every command with TensorFlow made unimportable): the frame parses the flags and
answers `--help` (`flag_parsing`), composes and checks the configuration (`command.compose`: what can be checked
without TensorFlow, such as a missing input file, ends the run before TensorFlow starts), starts TensorFlow quietly
and prints the devices it runs on (`quiet_tensorflow`), calls `main`, and ends the process with the exit code the
outcome means, an error as one line (`exit_codes`). A run stopped by a signal (130, 143) after saving its work
ends at once, without TensorFlow's slow teardown.
"""

import functools
import os
import sys
import traceback

from absl import app, logging

from bert_tf.cli.command import call_main, compose
from bert_tf.cli.exit_codes import EXIT_INTERRUPTED, EXIT_PREEMPTED, classify, exit_with
from bert_tf.cli.flag_parsing import parse_flags
from bert_tf.cli.quiet_tensorflow import describe_devices, start_tensorflow_quietly


def run(command):
    """Parses the flags, composes the configuration, runs `main(config)` and ends the process with the exit code
    the outcome means.

    Example:
    >>> from bert_tf.cli import vocab
    >>> run(vocab.COMMAND)  # doctest: +SKIP
    """
    if "tensorflow" in sys.modules:
        # Imported before the command ran (a script that calls `run()`): TensorFlow's import queued an absl
        # callback that lists the devices as absl starts, which would print the C++ start-up lines ("failed call
        # to cuInit"). Listing them quietly now leaves that callback nothing to print.
        start_tensorflow_quietly()
    parsed = {}

    def parser(argv):
        parsed["flags"], rest = parse_flags(command, argv)
        return rest

    app.run(functools.partial(_run_main, command, parsed), flags_parser=parser)


def _run_main(command, parsed, argv):
    try:
        config = compose(command, parsed["flags"], argv[1:])
        print(f"{command.program}: {describe_devices()}", file=sys.stderr, flush=True)
        code = call_main(command, config)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        exit_with(command.program, EXIT_INTERRUPTED, "interrupted.")
    except Exception as error:  # every failure ends in one line and an exit code
        if logging.get_verbosity() >= logging.DEBUG:
            traceback.print_exc()
        exit_with(command.program, *classify(error))
    if code in (EXIT_INTERRUPTED, EXIT_PREEMPTED):
        # The checkpoint and logs are written. TensorFlow's teardown of its thread pools at interpreter exit can
        # take a good part of a preemption notice on a loaded machine: skip it.
        logging.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code

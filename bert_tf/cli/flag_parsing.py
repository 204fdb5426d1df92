"""How a command reads its command line: its own flags (`bert_tf.cli.command.command_flag_values`) and absl's
(logging, `--verbosity=debug`), a flag error as one line and exit 2, `--help` as the command's own flags grouped by
their fields' help groups, and exit 0. No TensorFlow: a command answers these before it starts.
"""

import sys
import textwrap

from absl import flags

from bert_tf.cli.command import command_flag_values, flag_error_message, parse_command_line
from bert_tf.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK, UsageError, exit_with
from bert_tf.config_schema import config_flags

FLAGS = flags.FLAGS

# absl's help flags print and exit 1, and name only the flags of the file Python ran (a console script's has none):
# the frame answers them itself, with the command's own flags, and exits 0.
_HELP_FLAGS = ("--help", "-help", "-h", "-?", "--helpshort", "-helpshort", "--helpfull", "-helpfull")
_FULL_HELP_FLAGS = ("--helpfull", "-helpfull")
_HELP_WIDTH = 100
_FRAME_GROUP = "the configuration (file, then platform, then flags, then --set)"


def parse_flags(command, argv):
    """The command's flags parsed from `argv` (absl's own, such as --verbosity, into absl's `FLAGS`), with a flag
    error as one line and exit code 2 (absl prints two lines and exits 1). Returns the command's `FlagValues` and
    what absl leaves (the program, then the flags nobody defines where the command passes them on).

    Extra positional arguments are refused: they are usually an unquoted glob the shell expanded.
    """
    help_flag = _help_flag(argv)
    if help_flag:
        print(command_help(command, full=help_flag in _FULL_HELP_FLAGS), end="")
        sys.exit(EXIT_OK)
    try:
        unknown = []
        flag_values = parse_command_line(command, argv, unknown)
    except flags.Error as error:
        exit_with(command.program, EXIT_BAD_INPUT, flag_error_message(error))
    except UsageError as error:
        exit_with(command.program, EXIT_BAD_INPUT, str(error))
    return flag_values, argv[:1] + unknown


def _help_flag(argv):
    """The help flag in `argv` (before a `--` that ends the flags), or None."""
    for arg in argv[1:]:
        if arg == "--":
            return None
        if arg in _HELP_FLAGS:
            return arg
    return None


def command_help(command, full=False):
    """What `--help` prints: the command's description and examples (its module docstring), then its flags under
    the help groups of the fields they set (`field_option(group=...)`, a section's `HELP_GROUP`), the frame's own
    last; `full` adds absl's flags (logging, verbosity).

    Example:
    >>> from bert_tf.cli import vocab
    >>> print(command_help(vocab.COMMAND))  # doctest: +SKIP
    """
    flag_values = command_flag_values(command)
    groups = {}
    for flag in config_flags(command.config):
        groups.setdefault(flag.group or f"{command.program} flags", []).append(flag.name)
    generated = {name for names in groups.values() for name in names}
    groups[_FRAME_GROUP] = [name for name in flag_values if name not in generated]
    lines = [f"usage: {command.program} [--flag=value ...]", ""]
    module = sys.modules.get(command.main.__module__)
    if module is not None and module.__doc__:
        lines += [module.__doc__.strip(), ""]
    for title, names in groups.items():
        lines.append(f"{title}:")
        lines += [_flag_line(flag_values[name]) for name in dict.fromkeys(names)]
        lines.append("")
    if full:
        for module_name, module_flags in sorted(FLAGS.flags_by_module_dict().items()):
            if module_name.startswith("absl"):
                lines += [f"absl flags ({module_name}):", *(_flag_line(f) for f in module_flags), ""]
    else:
        lines.append("--helpfull also lists absl's flags (logging; --verbosity=debug shows tracebacks).")
    return "\n".join(lines) + "\n"


def _flag_line(flag):
    text = f"--{flag.name}"
    if flag.short_name:
        text += f" (-{flag.short_name})"
    text += f": {' '.join(flag.help.split())}"
    if flag.default not in (None, [], ()):
        default = str(flag.default).lower() if isinstance(flag.default, bool) else flag.default
        text += f" (default: {default})"
    return textwrap.fill(text, width=_HELP_WIDTH, initial_indent="  ", subsequent_indent="      ")

"""How a command reads its command line: absl's flag parsing with a flag error as one line and exit 2, `--help` as
the command's own flags (grouped by the command module's `HELP_GROUPS`) and exit 0, and `--verbosity=debug`.
No TensorFlow: a command answers these before it starts.
"""

import re
import sys
import textwrap

from absl import flags

from bert_tf.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK, exit_with

FLAGS = flags.FLAGS

# absl's help flags print and exit 1, and name only the flags of the file Python ran (a console script's has none):
# the frame answers them itself, with the command's own flags, and exits 0.
_HELP_FLAGS = ("--help", "-help", "-h", "-?", "--helpshort", "-helpshort", "--helpfull", "-helpfull")
_FULL_HELP_FLAGS = ("--helpfull", "-helpfull")
_HELP_WIDTH = 100
# absl's --verbosity takes integers; the contract's --verbosity=debug means 1.
_VERBOSITY_NAMES = {"debug": "1", "info": "0", "warning": "-1", "error": "-2", "fatal": "-3"}


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
        exit_with(program, EXIT_BAD_INPUT, _flag_error_message(error))
    if len(rest) > 1 and not known_only:
        exit_with(program, EXIT_BAD_INPUT,
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

"""How a command reads its command line: its own flags, generated from its configuration's fields
(`bert_tf.cli.config_flags`) into a `FlagValues` of its own, beside the frame's `--config` and `--set`; absl's own
flags (logging, `--verbosity=debug`) into absl's `FLAGS`; and `--help`, the command's own flags grouped by their
fields' help groups. No TensorFlow: a command answers these before it starts.

Example:
>>> from bert_tf.cli import evaluate
>>> flag_values, rest = parse_command_line(evaluate.COMMAND, ["bert-evaluate", "--model_dir=runs/demo",
...                                                           "--eval_input_file=heldout.tfrecord"])
>>> flag_values["model_dir"].value, rest
('runs/demo', [])
"""

import re
import sys
import textwrap

from absl import flags

from bert_tf.cli.config_flags import define_config_flags
from bert_tf.cli.exit_codes import UsageError
from bert_tf.config_schema import config_flags

FLAGS = flags.FLAGS

# The frame's own flags, defined for every command beside those generated from its configuration.
CONFIG_FLAG, SET_FLAG = "config", "set"
# absl's --verbosity takes integers; the contract's --verbosity=debug means 1.
_VERBOSITY_NAMES = {"debug": "1", "info": "0", "warning": "-1", "error": "-2", "fatal": "-3"}
# absl's help flags print and exit 1, and name only the flags of the file Python ran (a console script's has none):
# the frame answers them itself, with the command's own flags, and exits 0.
_HELP_FLAGS = ("--help", "-help", "-h", "-?", "--helpshort", "-helpshort", "--helpfull", "-helpfull")
_FULL_HELP_FLAGS = ("--helpfull", "-helpfull")
_HELP_WIDTH = 100
_FRAME_GROUP = "the configuration (--config, then the flags and --set)"


def command_flag_values(command):
    """A new `FlagValues` holding the command's flags: one per field of its configuration that has a help, and the
    frame's --config and --set. A flag of the section a `--config` file holds, in a configuration made of sections
    (bert-pretrain's recipe), defaults to None: left unset it keeps the file's value, and `--help` says so.

    >>> from bert_tf.cli import evaluate
    >>> sorted(command_flag_values(evaluate.COMMAND))[:3]
    ['baseline_input_file', 'config', 'eval_batch_size']
    """
    flag_values = flags.FlagValues()
    define_config_flags(command.config, flag_values, without_defaults_under=command.main_section)
    flags.DEFINE_string(CONFIG_FLAG, None, command.config_help, flag_values=flag_values)
    flags.DEFINE_multi_string(SET_FLAG, None, command.set_help, flag_values=flag_values)
    return flag_values


def parse_command_line(command, argv):
    """(the command's `FlagValues` with `argv` parsed, the arguments nobody defines): argv[0] is the program;
    absl's own flags (--verbosity) go into absl's `FLAGS`. A flag error raises absl's `flags.Error`, as does a
    required flag left out, and an argument left over a `UsageError`, unless the command's configuration passes
    unknown arguments on (the Beam pipeline's options).
    """
    flag_values = command_flag_values(command)
    passes_on = command.unknown_flags_field is not None
    rest = flag_values(_with_verbosity_numbers(argv), known_only=True)
    rest = FLAGS(rest, known_only=passes_on)
    if len(rest) > 1 and not passes_on:
        raise UsageError(f"unexpected arguments {rest[1:]}: every input is a flag (--name=value); quote globs so the "
                         f"shell does not expand them (--input_file='dir/*.txt') and join several with commas.")
    for name in command.required:
        if flag_values[name].value is None:
            raise flags.IllegalFlagValueError(f"flag --{name}=None: Flag --{name} must have a value other than None.")
    return flag_values, rest[1:]


def flag_error_message(error):
    """The one line of an absl flag error, with the fix."""
    required = re.match(r"flag --(\w+)=None: Flag --\w+ must have a value other than None", str(error))
    if required:
        return f"--{required.group(1)} is required: pass --{required.group(1)}=... (--helpshort lists the flags)."
    return f"{error} (--helpshort lists the flags)."


def help_asked(argv):
    """The help flag in `argv` (before a `--` that ends the flags), or None.

    >>> help_asked(["bert-vocab", "--input_file=a.txt", "-h"]), help_asked(["bert-vocab", "--", "--help"])
    ('-h', None)
    """
    for arg in argv[1:]:
        if arg == "--":
            return None
        if arg in _HELP_FLAGS:
            return arg
    return None


def command_help(command, help_flag="--help"):
    """What `help_flag` prints: the command's description and examples (its module docstring), then its flags under
    the help groups of the fields they set (`field_option(group=...)`, a section's `HELP_GROUP`), the frame's own
    last; `--helpfull` adds absl's flags (logging, verbosity).

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
    if help_flag in _FULL_HELP_FLAGS:
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


def _with_verbosity_numbers(argv):
    """`argv` with `--verbosity=debug` (and the other level names) as the numbers absl takes."""
    out = list(argv)
    for i, arg in enumerate(out):
        for prefix in ("--verbosity=", "-v="):
            if arg.startswith(prefix) and arg[len(prefix):].lower() in _VERBOSITY_NAMES:
                out[i] = prefix + _VERBOSITY_NAMES[arg[len(prefix):].lower()]
        if arg in ("--verbosity", "-v") and i + 1 < len(out) and out[i + 1].lower() in _VERBOSITY_NAMES:
            out[i + 1] = _VERBOSITY_NAMES[out[i + 1].lower()]
    return out

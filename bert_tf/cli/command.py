"""What a command is, and the one way its configuration is composed.

A command is a configuration `Section` and a `main(config)` that returns an exit code (None: 0). `Command` names
the two and what the frame needs to know: which part of the configuration a `--config` file holds, whether it takes
`--platform`, what it checks before TensorFlow starts. Its flags are generated from the configuration's fields
(`bert_tf.cli.config_flags`), into a `FlagValues` of its own, so that commands never share absl's global flags.

`compose(command, flag_values)` builds the configuration the same way for every command:

1. the `--config` file (a YAML/JSON path, or a shipped configuration's name), else the fields' defaults;
2. `--platform` (commands that take it): the platform's settings (configs/platforms.yaml);
3. the flags given on the command line, each setting the field it was generated from;
4. `--set FIELD=VALUE`: any field of the file's section, by path;
5. the command's checks that need no TensorFlow (a missing input file), so that a bad run ends before it starts.

It logs the configuration it composed (`--verbosity=debug` shows it). `run_command(command, argv)` parses, composes
and runs `main` in this process and returns the exit code, an error as the one line a user would see on stderr:
tests use it, and `bert_tf.cli.app.run` wraps it for a console script.

Example:
>>> from bert_tf.cli import finetune
>>> values = parse_command_line(finetune.COMMAND, ["bert-finetune", "--init_checkpoint=runs/demo", "--train_file=a.tsv",
...     "--dev_file=b.tsv", "--output_dir=out", "--learning_rate=2e-5", "--set=seed=7"])
>>> config = compose(finetune.COMMAND, values)
>>> config.learning_rate, config.seed, config.train_batch_size
(2e-05, 7, 32)
"""

import dataclasses
import re
import sys
import traceback
import typing
from typing import Callable, Optional

from absl import flags, logging

from bert_tf.cli.config_flags import define_config_flags, given_settings
from bert_tf.cli.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, UsageError, classify, error_line
from bert_tf.config_loading import load_config
from bert_tf.config_schema import Section, parse_assignments

# absl's --verbosity takes integers; the contract's --verbosity=debug means 1.
_VERBOSITY_NAMES = {"debug": "1", "info": "0", "warning": "-1", "error": "-2", "fatal": "-3"}
# The frame's own flags, defined for every command beside those generated from its configuration.
CONFIG_FLAG, SET_FLAG, PLATFORM_FLAG = "config", "set", "platform"


class CommandConfig(Section):
    """A command's configuration made of sections (`bert-pretrain`'s recipe and run options): `override` hands
    each section the settings whose path starts with its name, so that the section's own rules (a recipe's phases
    rescaled to a new num_train_steps) and error messages apply as if it were overridden alone.

    Example:
    >>> @dataclasses.dataclass(frozen=True)
    ... class Options(Section):
    ...     steps: int = 1
    >>> @dataclasses.dataclass(frozen=True)
    ... class Both(CommandConfig):
    ...     first: Options = Options()
    ...     second: Options = Options()
    >>> Both().override({"second.steps": 3}).second.steps
    3
    """

    def override(self, settings, where=None, flags=None):
        sections = {f.name for f in dataclasses.fields(self)
                    if isinstance(getattr(self, f.name), Section)}
        by_section, own = {}, {}
        for path, value in settings.items():
            head, _, rest = path.partition(".")
            if head in sections and rest:
                by_section.setdefault(head, {})[rest] = value
            else:
                own[path] = value
        config = super().override(own, where, flags) if own else self
        replaced = {}
        for name, section_settings in by_section.items():
            given_by = {rest: (flags or {}).get(f"{name}.{rest}") for rest in section_settings}
            replaced[name] = getattr(config, name).override(
                section_settings, where, {path: flag for path, flag in given_by.items() if flag})
        return dataclasses.replace(config, **replaced) if replaced else config


@dataclasses.dataclass(frozen=True)
class Command:
    """A console script: its configuration and its `main`, and how the frame composes and checks the first.

    Attributes:
        config: the configuration class (a `Section`); `main` receives one.
        main: `main(config) -> exit code` (None: 0). It imports TensorFlow itself, when it needs it.
        file_section: the field of `config` that a `--config` file holds and `--set` addresses (bert-pretrain's
            "recipe"); None: the whole configuration.
        load: `load(name_or_path)` -> that section, for `--config` (default: `load_config` of a YAML/JSON path).
        config_help: `--config`'s help.
        platform: `platform(section, name)` -> the file section with the platform's settings, for `--platform`
            (None: the command takes no --platform); `platform_help` is its help.
        check: `check(config)`, what can be checked without TensorFlow; raises an `InputError`.
        required: flags that must be given.
        flags_keep_file_values: the flags of the file section default to None, so that a flag left unset keeps the
            file's value (bert-pretrain's recipe flags); otherwise every flag's default is its field's.
        errors_name_the_source: errors from the flags start with "command line:" and from --set with "--set:";
            otherwise with the section's own name (bert-pretrain: "recipe 'bert_base_paper': ...").
        pass_on_unknown_flags_to: a field of `config` (a tuple of strings) that receives the flags nobody
            defines (the Beam pipeline passes them on to Beam as its options); None: such a flag is an error.
    """

    config: type
    main: Callable
    file_section: Optional[str] = None
    load: Optional[Callable] = None
    config_help: str = "A YAML file with any of the fields below; flags given on the command line override it."
    platform: Optional[Callable] = None
    platform_help: str = ""
    check: Optional[Callable] = None
    required: typing.Tuple[str, ...] = ()
    flags_keep_file_values: bool = False
    errors_name_the_source: bool = True
    pass_on_unknown_flags_to: Optional[str] = None

    @property
    def program(self):
        """The console script's name: `bert-` and the module's name, with hyphens."""
        module = self.main.__module__
        if module == "__main__":  # run as `python -m bert_tf.cli.<command>`
            module = sys.modules["__main__"].__spec__.name
        return "bert-" + module.rsplit(".", 1)[-1].replace("_", "-")

    def file_class(self):
        """The class of the section a --config file holds."""
        if self.file_section is None:
            return self.config
        return typing.get_type_hints(self.config)[self.file_section]


def command_flag_values(command):
    """A new `FlagValues` holding the command's flags: the frame's (--config, --set, --platform) and one per field
    of its configuration that has a help.

    >>> from bert_tf.cli import evaluate
    >>> sorted(command_flag_values(evaluate.COMMAND))[:3]
    ['baseline_input_file', 'config', 'eval_batch_size']
    """
    flag_values = flags.FlagValues()
    keep_file = command.file_section if command.flags_keep_file_values else None
    define_config_flags(command.config, flag_values, without_defaults_under=keep_file)
    flags.DEFINE_string(CONFIG_FLAG, None, command.config_help, flag_values=flag_values)
    if command.platform is not None:
        flags.DEFINE_string(PLATFORM_FLAG, None, command.platform_help, flag_values=flag_values)
    fields = "recipe field" if command.file_section == "recipe" else "field"
    flags.DEFINE_multi_string(SET_FLAG, None, f"Any {fields} as FIELD=VALUE (VALUE read as YAML), e.g. "
                              f"--set={_set_example(command)}.", flag_values=flag_values)
    return flag_values


def parse_command_line(command, argv, unknown=None):
    """The command's `FlagValues` with `argv` (argv[0] is the program) parsed, absl's own flags (--verbosity) into
    absl's `FLAGS`. A flag error raises absl's `flags.Error`, as does a required flag left out, and a positional
    argument a `UsageError`. A command that passes unknown flags on gets them appended to the list `unknown`.
    """
    flag_values = command_flag_values(command)
    rest = flag_values(_with_verbosity_numbers(argv), known_only=True)
    rest = flags.FLAGS(rest, known_only=bool(command.pass_on_unknown_flags_to))
    check_no_extra_arguments(command, rest)
    if unknown is not None:
        unknown.extend(rest[1:])
    for name in command.required:
        if flag_values[name].value is None:
            raise flags.IllegalFlagValueError(f"flag --{name}=None: Flag --{name} must have a value other than None.")
    return flag_values


def check_no_extra_arguments(command, rest):
    """Refuses arguments left after the flags (`rest`, the program first) unless the command passes them on: they are
    usually an unquoted glob the shell expanded."""
    if len(rest) > 1 and not command.pass_on_unknown_flags_to:
        raise UsageError(f"unexpected arguments {rest[1:]}: every input is a flag (--name=value); quote globs so the "
                         f"shell does not expand them (--input_file='dir/*.txt') and join several with commas.")


def compose(command, flag_values, unknown_flags=()):
    """The command's configuration: file (or defaults), platform, flags, --set, then the command's checks;
    `unknown_flags` go to the field `pass_on_unknown_flags_to` names.

    Raises an `InputError` (a `ConfigError`) naming the field, the value and the fix.
    """
    file_class = command.file_class()
    values = {}
    if flag_values[CONFIG_FLAG].value is not None:
        loaded = (command.load or (lambda path: load_config(file_class, path)))(flag_values[CONFIG_FLAG].value)
        values = {command.file_section: loaded} if command.file_section else loaded.to_dict()
    config = command.config.from_dict(values, command.config.__name__)
    if command.platform is not None and flag_values[PLATFORM_FLAG].value:
        config = _replace_file_section(command, config, lambda section: command.platform(
            section, flag_values[PLATFORM_FLAG].value))
    flag_where, set_where = ("command line", "--set") if command.errors_name_the_source else (None, None)
    settings, given_by = given_settings(command.config, flag_values)
    if settings:
        config = config.override(settings, flag_where, given_by)
    assignments = parse_assignments(flag_values[SET_FLAG].value, _set_example(command), file_class.ERROR)
    if assignments:
        config = _replace_file_section(command, config, lambda section: section.override(assignments, set_where))
    if command.pass_on_unknown_flags_to:
        config = dataclasses.replace(config, **{command.pass_on_unknown_flags_to: tuple(unknown_flags)})
    if command.check is not None:
        command.check(config)
    logging.debug("%s: the configuration composed from the file, the platform, the flags and --set:\n%s",
                  command.program, _as_yaml(config))
    return config


def run_command(command, argv, stderr=None):
    """Parses `argv`, composes the configuration and runs `main` in this process; returns the exit code. An error
    prints the one line a user sees (`bert-x: error: ...`) to `stderr` (default: sys.stderr), as the console
    script does, and its code is returned (2 bad input, 1 internal, 3 non-finite loss, 130 Ctrl-C).

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
        unknown = []
        flag_values = parse_command_line(command, argv, unknown)
        config = compose(command, flag_values, unknown)
        return call_main(command, config, stderr)
    except flags.Error as error:
        return report(command.program, EXIT_BAD_INPUT, flag_error_message(error), stderr)
    except Exception as error:  # every failure ends in one line and an exit code
        if logging.get_verbosity() >= logging.DEBUG:
            traceback.print_exc()
        return report(command.program, *classify(error), stderr)


def call_main(command, config, stderr=None):
    """`main(config)`'s exit code, with Ctrl-C as 130 and every other failure as `classify` says."""
    try:
        code = command.main(config)
    except KeyboardInterrupt:
        return report(command.program, EXIT_INTERRUPTED, "interrupted.", stderr or sys.stderr)
    return EXIT_OK if code is None else code


def report(program, code, message, stderr):
    """Prints the command's last line (`error_line`) to `stderr` and returns `code`."""
    print(error_line(program, code, message), file=stderr, flush=True)
    return code


def _replace_file_section(command, config, change):
    if command.file_section is None:
        return change(config)
    return dataclasses.replace(config, **{command.file_section: change(getattr(config, command.file_section))})


def _set_example(command):
    return "optimizer.beta_1=0.95" if command.file_section == "recipe" else "learning_rate=2e-5"


def _as_yaml(config):
    import yaml

    return yaml.safe_dump(config.to_dict(), sort_keys=False)


def flag_error_message(error):
    """The one line of an absl flag error, with the fix."""
    required = re.match(r"flag --(\w+)=None: Flag --\w+ must have a value other than None", str(error))
    if required:
        return f"--{required.group(1)} is required: pass --{required.group(1)}=... (--helpshort lists the flags)."
    return f"{error} (--helpshort lists the flags)."


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

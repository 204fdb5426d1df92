"""What a command is, and the one way its configuration is composed.

A command is a configuration `Section` and a `main(config)` that returns an exit code (None: 0). `Command` names
the two and what every command may add: the loader of its `--config` files, their help, its checks before
TensorFlow starts and its required flags. What only one command needs is a setting of its configuration class
instead: the section a `--config` file holds (`CommandConfig.MAIN_SECTION`, bert-pretrain's recipe), the field that
receives the arguments nobody defines (`Section.UNKNOWN_FLAGS_FIELD`, the Beam pipeline's options).

`compose(command, flag_values)` builds the configuration the same way for every command:

1. the `--config` file (a YAML/JSON path, or a shipped configuration's name), else the fields' defaults;
2. the command line's settings in one `override`: each flag given sets the field it was generated from, and
   `--set FIELD=VALUE` any field by its path (a later --set of the same field wins over its flag);
3. the command's checks that need no TensorFlow (a missing input file), so that a bad run ends before it starts.

It logs the configuration it composed (`--verbosity=debug` shows it). `bert_tf.cli.app.run_command` runs it.

Example:
>>> from bert_tf.cli import finetune
>>> from bert_tf.cli.flag_parsing import parse_command_line
>>> values, _ = parse_command_line(finetune.COMMAND, ["bert-finetune", "--init_checkpoint=runs/demo",
...     "--train_file=a.tsv", "--dev_file=b.tsv", "--output_dir=out", "--learning_rate=2e-5", "--set=seed=7"])
>>> config = compose(finetune.COMMAND, values)
>>> config.learning_rate, config.seed, config.train_batch_size
(2e-05, 7, 32)
"""

import dataclasses
import sys
import typing
from typing import Callable, Optional

from absl import logging

from bert_tf.cli.config_flags import given_settings
from bert_tf.cli.flag_parsing import CONFIG_FLAG, SET_FLAG
from bert_tf.config_loading import load_config, read_config_file
from bert_tf.config_schema import Section, parse_assignments
from bert_tf.file_io import file_exists, is_directory

# Where errors of the command line's settings say they come from, unless the configuration they change has a name
# of its own (a recipe's: "recipe 'bert_base_paper': ...").
COMMAND_LINE = "command line"


class CommandConfig(Section):
    """A command's configuration made of sections (`bert-pretrain`'s recipe and run options).

    `MAIN_SECTION` is the section a `--config` file holds and whose fields `--set` names without a prefix
    (`--set=learning_rate=1e-4`); the others' fields are named with their section's (`--set=run.tpu=my-tpu`). A
    `--config` file holds the main section, unless its top level is exactly the sections' names (a whole
    configuration). `override` hands each section the settings whose path starts with its name, so that the
    section's own rules (a recipe's phases rescaled to a new num_train_steps) and error messages apply as if it
    were overridden alone.

    Example:
    >>> @dataclasses.dataclass(frozen=True)
    ... class Options(Section):
    ...     steps: int = 1
    >>> @dataclasses.dataclass(frozen=True)
    ... class Both(CommandConfig):
    ...     MAIN_SECTION = "first"
    ...     first: Options = Options()
    ...     second: Options = Options()
    >>> Both().override({"second.steps": 3}).second.steps
    3
    >>> Both.path_of("steps"), Both.path_of("second.steps")
    ('first.steps', 'second.steps')
    """

    MAIN_SECTION = None

    @classmethod
    def section_names(cls):
        """The names of the fields that are sections."""
        hints = typing.get_type_hints(cls)
        return [f.name for f in dataclasses.fields(cls)
                if isinstance(hints[f.name], type) and issubclass(hints[f.name], Section)]

    @classmethod
    def path_of(cls, path):
        """The full path of a `--set` path: another section's path as given, else a field of the main section."""
        head = path.partition(".")[0]
        if cls.MAIN_SECTION is None or (head in cls.section_names() and head != cls.MAIN_SECTION):
            return path
        return f"{cls.MAIN_SECTION}.{path}"

    def override(self, settings, where=None, flags=None):
        sections = set(self.section_names())
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
        config: the configuration class (a `Section`, or a `CommandConfig` of sections); `main` receives one.
        main: `main(config) -> exit code` (None: 0). It imports TensorFlow itself, when it needs it.
        load: `load(name_or_path)` -> the section a `--config` file holds (default: `load_config` of a YAML/JSON
            path); a shipped configuration's name is the loader's to resolve.
        config_help: `--config`'s help.
        check: `check(config)`, what can be checked without TensorFlow; raises an `InputError`.
        required: flags that must be given.
    """

    config: type
    main: Callable
    load: Optional[Callable] = None
    config_help: str = "A YAML file with any of the fields below; flags given on the command line override it."
    check: Optional[Callable] = None
    required: typing.Tuple[str, ...] = ()

    @property
    def program(self):
        """The console script's name: `bert-` and the module's name, with hyphens."""
        module = self.main.__module__
        if module == "__main__":  # run as `python -m bert_tf.cli.<command>`
            module = sys.modules["__main__"].__spec__.name
        return "bert-" + module.rsplit(".", 1)[-1].replace("_", "-")

    @property
    def main_section(self):
        """The field of `config` a `--config` file holds (`CommandConfig.MAIN_SECTION`); None: the whole of it."""
        return self.config.MAIN_SECTION if issubclass(self.config, CommandConfig) else None

    @property
    def file_class(self):
        """The class of the section a `--config` file holds."""
        if self.main_section is None:
            return self.config
        return typing.get_type_hints(self.config)[self.main_section]

    @property
    def unknown_flags_field(self):
        """The field that receives the arguments nobody defines (`Section.UNKNOWN_FLAGS_FIELD`), or None."""
        return self.config.UNKNOWN_FLAGS_FIELD

    @property
    def set_example(self):
        """A `--set` example for the help and for errors: a nested field of the file's section."""
        return "optimizer.beta_1=0.95" if self.main_section else "learning_rate=2e-5"

    @property
    def set_help(self):
        """`--set`'s help: which fields it reaches and how they are named."""
        if self.main_section is None:
            return f"Any field as FIELD=VALUE (VALUE read as YAML), e.g. --set={self.set_example}."
        others = [name for name in self.config.section_names() if name != self.main_section]
        return (f"Any {self.main_section} field as FIELD=VALUE (VALUE read as YAML), e.g. --set={self.set_example}, "
                f"and any field of {', '.join(others)} as {others[0]}.FIELD=VALUE.")


def compose(command, flag_values, unknown_flags=()):
    """The command's configuration: file (or defaults), the command line's flags and --set, then the command's
    checks; `unknown_flags` go to the command's `unknown_flags_field`.

    Raises an `InputError` (a `ConfigError`) naming the field, the value and the fix.
    """
    config = _from_file(command, flag_values[CONFIG_FLAG].value)
    settings, given_by = given_settings(command.config, flag_values)
    assignments = parse_assignments(flag_values[SET_FLAG].value, command.set_example, command.file_class.ERROR)
    for path, value in assignments.items():
        path = command.config.path_of(path) if command.main_section else path
        settings[path] = value
        given_by.pop(path, None)
    if settings:
        config = config.override(settings, COMMAND_LINE, given_by)
    if command.unknown_flags_field:
        config = dataclasses.replace(config, **{command.unknown_flags_field: tuple(unknown_flags)})
    if command.check is not None:
        command.check(config)
    logging.debug("%s: the configuration composed from the file, the flags and --set:\n%s", command.program,
                  _as_yaml(config))
    return config


def _from_file(command, name_or_path):
    """The configuration a `--config` file holds (the rest of it at its defaults), or the defaults."""
    if name_or_path is None:
        return command.config.from_dict({}, command.config.__name__)
    if command.main_section is not None and file_exists(name_or_path) and not is_directory(name_or_path):
        values, where = read_config_file(name_or_path, command.config.ERROR)
        if set(values) == set(command.config.section_names()):
            return command.config.from_dict(values, where)
    loaded = (command.load or (lambda path: load_config(command.file_class, path)))(name_or_path)
    if command.main_section is None:
        return loaded
    return command.config.from_dict({command.main_section: loaded}, command.config.__name__)


def _as_yaml(config):
    import yaml

    return yaml.safe_dump(config.to_dict(), sort_keys=False)

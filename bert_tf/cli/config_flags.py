"""The flags of a command, generated from its configuration's fields (`field_option`'s help, flag name and choices;
`bert_tf.config_schema.config_flags`): each sets the field of its name, with the field's type, and a list item's
field (a phase's) is given once per item. A new option is a field with its help.

Example:
>>> from absl import flags
>>> from bert_tf.finetuning.recipe import FinetuningRecipe
>>> flag_values = flags.FlagValues()
>>> define_config_flags(FinetuningRecipe, flag_values)[:2]
['init_checkpoint', 'init_saved_model']
>>> _ = flag_values(["bert-finetune", "--learning_rate=2e-5"])
>>> given_settings(FinetuningRecipe, flag_values)
({'learning_rate': 2e-05}, {'learning_rate': '--learning_rate'})
"""

import dataclasses
import typing

from absl import flags

from bert_tf.config_schema import config_flags

_DEFINE = {str: flags.DEFINE_string, int: flags.DEFINE_integer, float: flags.DEFINE_float, bool: flags.DEFINE_bool}
_DEFINE_PER_ITEM = {str: flags.DEFINE_multi_string, int: flags.DEFINE_multi_integer}


def define_config_flags(cls, flag_values, without_defaults_under=None):
    """Defines in `flag_values` a flag for each field of the configuration class `cls` that has a help. A flag's
    default is its field's, except under the section `without_defaults_under` (a field name of `cls`: the one a
    configuration file holds), whose flags default to None, as `--help` shows them: left unset, they keep the value
    the file gave. Returns the flags' names."""
    for flag in config_flags(cls):
        keeps_file_value = without_defaults_under and flag.path.startswith(f"{without_defaults_under}.")
        default = None if keeps_file_value or flag.default is dataclasses.MISSING else flag.default
        if flag.choices:
            flags.DEFINE_enum(flag.name, default, list(flag.choices), flag.help, flag_values=flag_values)
        elif flag.kind == typing.Tuple[str, ...]:  # a list field: the flag is repeated, once per item
            flags.DEFINE_multi_string(flag.name, default, flag.help, flag_values=flag_values)
        elif flag.per_item:
            _DEFINE_PER_ITEM[flag.kind](flag.name, default, flag.help, flag_values=flag_values)
        else:
            _DEFINE[flag.kind](flag.name, default, flag.help, flag_values=flag_values)
    return [flag.name for flag in config_flags(cls)]


def given_settings(cls, flag_values):
    """({path: value}, {path: "--flag"}) of the flags of `cls` given on the command line, for `Section.override`
    (the second names the flag in errors)."""
    given = [flag for flag in config_flags(cls) if flag_values[flag.name].present]
    return ({flag.path: flag_values[flag.name].value for flag in given},
            {flag.path: f"--{flag.name}" for flag in given})

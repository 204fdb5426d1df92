"""The flags of a command that has a configuration, generated from the configuration's fields (`field_option`'s
help, flag name and choices; `bert_tf.config_schema.config_flags`): each sets the field of its name, with the field's
type, and a list item's field (a phase's) is given once per item. A new option is a field with its help.

Example:
>>> define_config_flags(FinetuningRecipe, __name__, with_defaults=True)  # doctest: +SKIP
>>> recipe = recipe.override(*given_settings(FinetuningRecipe))  # doctest: +SKIP
"""

from absl import flags

from bert_tf.config_schema import config_flags

FLAGS = flags.FLAGS

_DEFINE = {str: flags.DEFINE_string, int: flags.DEFINE_integer, float: flags.DEFINE_float, bool: flags.DEFINE_bool}
_DEFINE_PER_ITEM = {str: flags.DEFINE_multi_string, int: flags.DEFINE_multi_integer}


def define_config_flags(cls, module_name, with_defaults):
    """Defines a flag for each field of the configuration class `cls` that has a help, as flags of the command
    module `module_name` (absl lists a flag under the module that defines it: `--help` and the tests read the
    command's own); `with_defaults`: a flag's default is its field's (else None: a flag left unset keeps the
    configuration's value). Returns the flags' names.
    """
    for flag in config_flags(cls):
        default = flag.default if with_defaults else None
        if flag.choices:
            flags.DEFINE_enum(flag.name, default, list(flag.choices), flag.help, module_name=module_name)
        elif flag.per_item:
            _DEFINE_PER_ITEM[flag.kind](flag.name, default, flag.help, module_name=module_name)
        else:
            _DEFINE[flag.kind](flag.name, default, flag.help, module_name=module_name)
    return [flag.name for flag in config_flags(cls)]


def given_settings(cls, flag_values=FLAGS):
    """({path: value}, {path: "--flag"}) of the flags of `cls` given on the command line, for `Section.override`
    (the second names the flag in errors)."""
    given = [flag for flag in config_flags(cls) if flag_values[flag.name].present]
    return ({flag.path: flag_values[flag.name].value for flag in given},
            {flag.path: f"--{flag.name}" for flag in given})

"""The one loader of configuration files: a recipe, a fine-tuning recipe, the platforms file, each a `Section`
(`bert_tf.config_schema`) read from a YAML or JSON file (a format_version key, `bert_tf.file_format`, is read and
set aside), or by the name of one that ships in configs/. Reads go
through the standard library (`bert_tf.file_io`; TensorFlow's gfile only for a gs:// path), so configurations
load without TensorFlow.

Example:
>>> from bert_tf.training.recipe import Recipe
>>> load_config(Recipe, "demo_cpu", shipped="pretrain").name
'demo_cpu'
"""

import json
import os

from bert_tf.config import configs_dir
from bert_tf.config_schema import read_yaml
from bert_tf.file_format import without_format_version
from bert_tf.file_io import file_exists, is_directory, read_text


def shipped_names(folder):
    """The names of the configurations that ship in configs/`folder`/ (their file names without `.yaml`).

    >>> "bert_base_paper" in shipped_names("pretrain")
    True
    """
    return sorted(f[:-len(".yaml")] for f in os.listdir(os.path.join(configs_dir(), folder)) if f.endswith(".yaml"))


def load_config(cls, name_or_path, shipped=None, kind="configuration"):
    """The `cls` a YAML or JSON file holds (`.json`: JSON, else YAML with 1.2's numbers), or, when `shipped` names
    a folder of configs/, the one of that name there. Errors name the file's base name; a path that is no file is
    an error naming `kind` (and the shipped names)."""
    path = name_or_path
    if shipped and not file_exists(path):
        named = os.path.join(configs_dir(), shipped, f"{name_or_path}.yaml")
        path = named if os.path.exists(named) else path
    if not file_exists(path) or is_directory(path):
        names = f" or one of {shipped_names(shipped)}" if shipped else ""
        raise cls.ERROR(f"No {kind} file {name_or_path!r}: pass a YAML path{names}.")
    values, where = read_config_file(path, cls.ERROR)
    return cls.from_dict(values, where)


def read_config_file(path, error):
    """(the mapping a YAML or JSON configuration file holds, its format_version set aside; the file's base name,
    which errors start with); what is not a mapping is an `error`."""
    where = os.path.basename(path)
    text = read_text(path)
    values = _read_json(text, where, error) if path.endswith(".json") else read_yaml(text, where, error)
    return without_format_version(values, where, error), where


def _read_json(text, where, error):
    try:
        values = json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{where} is not valid JSON: {e}") from None
    if not isinstance(values, dict):
        raise error(f"{where} must hold a mapping of fields, got {type(values).__name__}.")
    return values

"""The format version of the files the package writes for itself to read back (a run's `recipe.yaml`, a model
directory's `bert_config.json`): a format_version key beside the file's own keys, so that a later version knows
what wrote a file. The original's keys stay as they were (the original `modeling.py` and Hugging Face read a
`bert_config.json` and ignore the extra key), and a file without the key, written before it existed, reads as
format 0.

Example:
>>> with_format_version({"hidden_size": 128})
{'format_version': 1, 'hidden_size': 128}
>>> without_format_version({"format_version": 1, "hidden_size": 128}, "bert_config.json")
{'hidden_size': 128}
>>> without_format_version({"format_version": 9}, "recipe.yaml")
Traceback (most recent call last):
bert_tf.errors.InputError: recipe.yaml has format_version 9, newer than this bert_tf reads (1): upgrade bert_tf.
"""

from bert_tf.errors import InputError

FORMAT_VERSION = 1
FORMAT_VERSION_KEY = "format_version"


def with_format_version(values):
    """`values` (a file's mapping) with the format version first."""
    return {FORMAT_VERSION_KEY: FORMAT_VERSION, **values}


def without_format_version(values, where, error=InputError):
    """`values` without the format version key; a version newer than this package's is an `error` naming `where`."""
    version = values.get(FORMAT_VERSION_KEY, 0)
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise error(f"{where} has {FORMAT_VERSION_KEY} {version!r}, newer than this bert_tf reads ({FORMAT_VERSION}): "
                    f"upgrade bert_tf.")
    return {key: value for key, value in values.items() if key != FORMAT_VERSION_KEY}

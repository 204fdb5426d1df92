"""The one schema machinery every configuration file and options object uses: the pre-training recipe
(`training/recipe.py`), the data-creation options (`instances/options.py`), the platforms file
(`training/platforms.py`) and the fine-tuning recipe (`finetuning/recipe.py`).

A configuration is a frozen dataclass that derives from `Section`:
- its fields' types come from the annotations (int, float, bool, str, a tuple of strings, a nested `Section`, a
  tuple of nested sections (`Tuple[Item, ...]`, a YAML list of mappings), optionally None) and are checked when it
  is built; a number written as a string is named as such;
- its ranges and choices are its `_rules()`, checked after the types;
- `Section.from_dict(values, where)` builds one from a mapping (YAML), refusing unknown and missing keys;
- `read_yaml(text, where)` reads YAML with 1.2's numbers (`1e-4` is a number), and `parse_value` reads a `--set` value.

Every error is a `ConfigError` (an `InputError`, so a command exits 2) with one line in one format:
`WHERE: FIELD=VALUE must be ...` for a wrong value and `WHERE: unknown field(s) [...]; known fields are [...]` for a
mistyped key.

Example:
>>> import dataclasses
>>> @dataclasses.dataclass(frozen=True)
... class Shape(Section):
...     width: int = 1
...     def _rules(self):
...         return (("width", self.width > 0, "must be positive"),)
>>> Shape.from_dict({"width": 3}, "shape.yaml").width
3
>>> Shape.from_dict({"widht": 3}, "shape.yaml")
Traceback (most recent call last):
bert_tf.config_schema.ConfigError: shape.yaml: unknown field(s) ['widht']; known fields are ['width'].
>>> Shape.from_dict({"width": "3"}, "shape.yaml")
Traceback (most recent call last):
bert_tf.config_schema.ConfigError: shape.yaml: width='3' must be an integer: write it without quotes (width: 3).
"""

import dataclasses
import math
import re
import typing

import yaml

from bert_tf.errors import InputError


class ConfigError(InputError):
    """A configuration field has a wrong value or name; the message names the field, the value and the fix."""


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


TYPE_CHECKS = {
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    float: (_is_number, "a finite number"),
    bool: (lambda v: isinstance(v, bool), "true or false"),
    str: (lambda v: isinstance(v, str), "a string"),
    typing.Tuple[str, ...]: (lambda v: isinstance(v, tuple) and all(isinstance(x, str) for x in v),
                             "a list of strings"),
}


def parses_as_number(text):
    """True if the string `text` reads as a number (so the user probably quoted one by mistake)."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def section_items(kind):
    """The `Section` class of the items of a `Tuple[Item, ...]` annotation, else None.

    >>> section_items(typing.Tuple[str, ...]) is None
    True
    """
    args = typing.get_args(kind)
    if (typing.get_origin(kind) is tuple and len(args) == 2 and args[1] is Ellipsis and isinstance(args[0], type)
            and issubclass(args[0], Section)):
        return args[0]
    return None


def _items_check(kind):
    """The (check, description) of a `Tuple[Item, ...]` field (items built by `Item.from_dict`), else None."""
    item = section_items(kind)
    if item is None:
        return None
    fields = ", ".join(f.name for f in dataclasses.fields(item))
    return (lambda v: isinstance(v, tuple) and all(isinstance(x, item) for x in v),
            f"a list of mappings, each with the fields {fields}")


def check_value_type(name, value, kind, error=ConfigError, optional=False):
    """Raises `error` if `value` is not of the plain type `kind` (a key of `TYPE_CHECKS`, or a tuple of sections);
    unknown kinds pass. `optional` says in the message that null is allowed too."""
    expected = TYPE_CHECKS.get(kind) or _items_check(kind)
    if expected is None or expected[0](value):
        return
    key = name.rpartition(".")[2]
    quoted = kind in TYPE_CHECKS and isinstance(value, str) and parses_as_number(value)
    fix = f": write it without quotes ({key}: {value})" if quoted else ""
    raise error(f"{name}={value!r} must be {expected[1]}{' or null' if optional else ''}{fix}.")


def check_field_types(spec, prefix="", error=ConfigError):
    """Raises `error` naming the first field of the dataclass `spec` whose value is not of its annotated type."""
    hints = typing.get_type_hints(type(spec))
    for field in dataclasses.fields(spec):
        value, kind = getattr(spec, field.name), hints[field.name]
        optional = type(None) in typing.get_args(kind)
        if optional:
            if value is None:
                continue
            kind = next(a for a in typing.get_args(kind) if a is not type(None))
        check_value_type(f"{prefix}{field.name}", value, kind, error, optional)


def check_keys(values, cls, where, required=(), error=ConfigError):
    """Raises `error` if the mapping `values` has keys that are not fields of the dataclass `cls`, or lacks one
    of `required`."""
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise error(f"{where}: unknown field(s) {unknown}; known fields are {sorted(fields)}.")
    missing = [k for k in required if k not in values]
    if missing:
        raise error(f"{where}: missing field(s) {missing}.")


class Section:
    """A frozen dataclass configuration that checks itself when built: field types from the annotations, then its
    `_rules()`, each `(field, ok, rule)`; `SECTION` prefixes its fields' names in errors ("optimizer.beta_1").
    `ERROR` is the `ConfigError` subclass it raises."""

    SECTION = ""
    ERROR = ConfigError

    def __post_init__(self):
        prefix = f"{self.SECTION}." if self.SECTION else ""
        check_field_types(self, prefix, self.ERROR)
        for field, ok, rule in self._rules():
            if not ok:
                raise self.ERROR(f"{prefix}{field}={getattr(self, field)!r} {rule}.")

    def _rules(self):
        return ()

    @classmethod
    def from_dict(cls, values, where):
        """Builds the section from a mapping, its nested sections from nested mappings, a tuple of sections from a
        list of mappings (item i's errors start with `where: field[i]`) and lists of strings as tuples; unknown or
        missing keys and wrong values are one-line errors that start with `where` (the file or the object the
        mapping came from)."""
        keys_where = f"{where}: {cls.SECTION}" if cls.SECTION else where
        if not isinstance(values, dict):
            raise cls.ERROR(f"{keys_where} must be a mapping of fields, got {values!r}.")
        hints = typing.get_type_hints(cls)
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        check_keys(values, cls, keys_where, required, cls.ERROR)
        values = dict(values)
        for name, value in values.items():
            kind = hints[name]
            item = next(filter(None, map(section_items, (kind, *typing.get_args(kind)))), None)
            if isinstance(kind, type) and issubclass(kind, Section) and isinstance(value, dict):
                values[name] = kind.from_dict(value, where)
            elif item is not None and isinstance(value, (list, tuple)):
                values[name] = tuple(v if isinstance(v, item) else item.from_dict(v, f"{keys_where}: {name}[{i}]")
                                     for i, v in enumerate(value))
            elif typing.Tuple[str, ...] in (kind, *typing.get_args(kind)) and isinstance(value, list):
                values[name] = tuple(value)
        try:
            return cls(**values)
        except cls.ERROR as e:
            message = str(e)
            raise cls.ERROR(message if message.startswith(f"{where}:") else f"{where}: {message}") from None


class YamlLoader(yaml.SafeLoader):
    """YAML with 1.2's numbers: PyYAML (YAML 1.1) reads `1e-4` without a dot as the string "1e-4"."""


YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+|\.[0-9_]+"
               r"(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF))$|^\.(?:nan|NaN|NAN)$"),
    list("-+0123456789."))


def read_yaml(text, where, error=ConfigError):
    """The mapping a YAML text holds; invalid YAML or a non-mapping is an `error` naming `where`."""
    try:
        values = yaml.load(text, Loader=YamlLoader)
    except yaml.YAMLError as e:
        raise error(f"{where} is not valid YAML: {e}") from None
    if not isinstance(values, dict):
        raise error(f"{where} must hold a mapping of fields, got {type(values).__name__}.")
    return values


def parse_value(text, path, error=ConfigError):
    """A `--set path=text` value read as YAML (numbers, booleans, lists); a syntax error names the path."""
    try:
        return yaml.load(text, Loader=YamlLoader)
    except yaml.YAMLError:
        raise error(f"{path}={text!r} is not a YAML value: quote it or fix its syntax.") from None


def parse_assignments(assignments, example="learning_rate=5e-5", error=ConfigError):
    """{path: value text} from `--set` items "path=value"; an item without "=" names the expected form."""
    values = {}
    for item in assignments or ():
        path, sep, value = item.partition("=")
        if not sep or not path.strip():
            raise error(f"--set={item!r} must be FIELD=VALUE, e.g. --set={example}.")
        values[path.strip()] = value
    return values

"""The one schema machinery every configuration uses: the model's `BertConfig` (`config.py`), the pre-training
recipe (`training/recipe.py`), the data-creation options (`instances/options.py`), the platforms file
(`platforms/platforms_file.py`) and the fine-tuning recipe (`finetuning/recipe.py`).

A configuration is a frozen dataclass that derives from `Section`:
- its fields' types come from the annotations (int, float, bool, str, a tuple of strings, a nested `Section`, a
  tuple of nested sections (`Tuple[Item, ...]`, a YAML list of mappings), optionally None) and are checked when it
  is built; a number written as a string is named as such;
- its ranges and choices are its `_rules()`, checked after the types;
- `Section.from_dict(values, where)` builds one from a mapping (YAML), refusing unknown and missing keys, and
  `to_dict()` gives the mapping back;
- `Section.override(settings)` is the one way to change one: by path (`optimizer.beta_1`, `phases.1.max_seq_length`,
  `phases.input_file` for every phase), a string value read as YAML (`parse_value`), as `--set PATH=VALUE` and a
  command's flags give them;
- `field_option(default, help, flag=..., choices=..., group=...)` marks a field as a command-line flag
  (`config_flags` lists them; `bert_tf.cli.config_flags` defines them); its help group is `group`, else the
  `HELP_GROUP` of the section it is in;
- `read_yaml(text, where)` reads YAML with 1.2's numbers (`1e-4` is a number); `bert_tf.config_loading` reads files.

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
import difflib
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
        value, (kind, optional) = getattr(spec, field.name), _plain_kind(hints[field.name])
        if not (optional and value is None):
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


def field_option(default=dataclasses.MISSING, help=None, *, flag=None, choices=None, group=None, **kwargs):
    """A dataclass field with what the schema and the command line read from it: `help` makes it a flag of a
    command that has this configuration (named `flag`, else the field's name; an enum of `choices`), listed by
    `--help` under `group` (default: the `HELP_GROUP` of the section that holds it). `help` may be a function that
    writes it when the flags are made (a list read from a file).

    >>> dataclasses.field(default=1).metadata == {}, field_option(1, "Steps.").metadata["help"]
    (True, 'Steps.')
    """
    metadata = {key: value for key, value in (("help", help), ("flag", flag), ("choices", choices),
                                              ("group", group)) if value is not None}
    return dataclasses.field(default=default, metadata=metadata, **kwargs)


def _plain_kind(kind):
    """`kind` without `Optional`, and whether it was optional."""
    args = typing.get_args(kind)
    if type(None) in args:
        return next(a for a in args if a is not type(None)), True
    return kind, False


class Section:
    """A frozen dataclass configuration that checks itself when built: field types from the annotations, then its
    `_rules()`, each `(field, ok, rule)`; `SECTION` prefixes its fields' names in errors ("optimizer.beta_1"; the
    items of a list, "phases[1].num_steps"). `ERROR` is the `ConfigError` subclass it raises.

    Its mapping (`to_dict`, `from_dict`) is what its YAML file holds, and `override` replaces fields by path.

    Example:
    >>> @dataclasses.dataclass(frozen=True)
    ... class Steps(Section):
    ...     steps: int = 10
    ...     def _rules(self):
    ...         return (("steps", self.steps > 0, "must be positive"),)
    >>> Steps().override({"steps": "20"}).to_dict()
    {'steps': 20}
    """

    SECTION = ""
    ERROR = ConfigError
    # The title `--help` lists this section's flags under (a field's own `group` wins); None: the enclosing one's.
    HELP_GROUP = None
    # A command's configuration: the field (a tuple of strings) that receives the command line's arguments that no
    # flag defines (the Beam pipeline's options, passed on to Beam); None: such an argument is an error.
    UNKNOWN_FLAGS_FIELD = None

    def __post_init__(self):
        prefix = f"{self.SECTION}." if self.SECTION else ""
        check_field_types(self, prefix, self.ERROR)
        for field, ok, rule in self._rules():
            if not ok:
                raise self.ERROR(f"{prefix}{field}={_value_at(self, field)!r} {rule}.")

    def _rules(self):
        return ()

    @classmethod
    def from_dict(cls, values, where=None):
        """Builds the section from a mapping, its nested sections from nested mappings, a tuple of sections from a
        list of mappings (item i's errors start with `where: field[i]`, or name it `field[i].` when the item class
        has a `SECTION`) and lists of strings as tuples; unknown or missing keys and wrong values are one-line
        errors that start with `where` (the file or the object the mapping came from; the class's name if None)."""
        where = where or cls.__name__
        keys_where = f"{where}: {cls.SECTION}" if cls.SECTION else where
        if not isinstance(values, dict):
            raise cls.ERROR(f"{keys_where} must be a mapping of fields, got {values!r}.")
        values = dict(values)
        hints = typing.get_type_hints(cls)
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        check_keys(values, cls, keys_where, required, cls.ERROR)
        for name, value in values.items():
            kind = hints[name]
            item = next(filter(None, map(section_items, (kind, *typing.get_args(kind)))), None)
            if isinstance(kind, type) and issubclass(kind, Section) and not isinstance(value, kind):
                values[name] = kind.from_dict(value, where)
            elif item is not None and isinstance(value, (list, tuple)):
                values[name] = tuple(v if isinstance(v, item) else _item_from_dict(item, v, keys_where, name, i)
                                     for i, v in enumerate(value))
            elif typing.Tuple[str, ...] in (kind, *typing.get_args(kind)) and isinstance(value, list):
                values[name] = tuple(value)
        try:
            return cls(**values)
        except cls.ERROR as e:
            message = str(e)
            raise cls.ERROR(message if message.startswith(f"{where}:") else f"{where}: {message}") from None

    def to_dict(self):
        """The mapping `from_dict` reads back (and a YAML file holds): nested sections and lists of sections as
        mappings and lists of mappings, tuples as lists."""
        values = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, Section):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = [v.to_dict() if isinstance(v, Section) else v for v in value]
            elif isinstance(value, dict):
                value = dict(value)
            values[field.name] = value
        return values

    def override(self, settings, where=None, flags=None):
        """A copy with fields replaced by path: "learning_rate", a nested section's "optimizer.beta_1", a field of
        every item of a list "phases.input_file" (a list with one value per item, or one value for a one-item
        list), one item's "phases.1.max_seq_length". A string value for a field that is not a string (from
        `--set path=value`) is read as YAML. `flags` maps a path to the flag that gave it, for errors to name.
        Errors start with the configuration's own name where it has one (`_override_where()`, a recipe's), else
        with `where` (where the settings came from: "command line"), else the class's name; a mistyped path in a
        section says which of its fields was meant.

        Then `_overridden(values, paths)` applies what setting a field implies (a subclass's rules, e.g. the phases
        rescaled to a new total) and the result is checked as a file would be.
        """
        where = self._override_where() or where or type(self).__name__
        values = self.to_dict()
        for path, value in settings.items():
            assignment = _Assignment(path, type(self), where, (flags or {}).get(path), self.ERROR)
            _set_path(type(self), values, path.split("."), value, assignment)
        return type(self).from_dict(self._overridden(values, set(settings)), where)

    def _override_where(self):
        """The name errors of `override` give this configuration when it has one of its own, else None."""
        return None

    def _overridden(self, values, paths):
        """`values` (the overridden mapping) after what setting `paths` implies; none by default."""
        return values


class ConfigFlag(typing.NamedTuple):
    """A command-line flag that sets one field of a configuration (a field with a `help`, see `field_option`).

    Attributes:
        name: the flag's name.
        path: the field's `override` path ("learning_rate", "optimizer.name", "phases.input_file").
        kind: the field's plain type (str, int, float or bool).
        per_item: whether the field is one of each item of a list (a phase's), so the flag is given once per item.
        help, choices, default: the flag's help, its enum values (or None) and the field's default.
        group: the title `--help` lists it under (None: with the command's other flags).
    """

    name: str
    path: str
    kind: type
    per_item: bool
    help: str
    choices: typing.Optional[tuple]
    default: object
    group: typing.Optional[str] = None


def config_flags(cls, prefix="", per_item=False, group=None):
    """The `ConfigFlag`s of the fields of `cls`, its nested sections and its list items, in field order.

    >>> @dataclasses.dataclass(frozen=True)
    ... class Steps(Section):
    ...     steps: int = field_option(10, "Steps to train.", flag="num_steps")
    >>> [(f.name, f.path, f.kind.__name__, f.default) for f in config_flags(Steps)]
    [('num_steps', 'steps', 'int', 10)]
    """
    flags = []
    hints = typing.get_type_hints(cls)
    group = cls.HELP_GROUP or group
    for field in dataclasses.fields(cls):
        kind, _ = _plain_kind(hints[field.name])
        path = f"{prefix}{field.name}"
        if "help" in field.metadata:
            flags.append(ConfigFlag(field.metadata.get("flag", field.name), path, kind, per_item,
                                    _help_text(field.metadata["help"]), field.metadata.get("choices"),
                                    field.default, field.metadata.get("group", group)))
        elif isinstance(kind, type) and issubclass(kind, Section):
            flags += config_flags(kind, f"{path}.", per_item, group)
        elif section_items(kind) is not None:
            flags += config_flags(section_items(kind), f"{path}.", True, group)
    return flags


def _help_text(help):
    """A field's help: the text, or what a function that writes it returns (a list read from a file)."""
    return help() if callable(help) else help


def _value_at(section, path):
    """The value of a rule's field, which may name an item of a list: "num_steps", "phases[1].name"."""
    value = section
    for name, index in re.findall(r"(\w+)(?:\[(\d+)\])?", path):
        value = getattr(value, name)
        if index:
            value = value[int(index)]
    return value


def _item_from_dict(item, values, where, name, index):
    """Item `index` of the list field `name`: named `name[index]` after `where`, as `name[index].field` in errors
    about its fields when its class has a `SECTION`."""
    if not item.SECTION:
        return item.from_dict(values, f"{where}: {name}[{index}]")
    try:
        return item.from_dict(values, where)
    except item.ERROR as e:
        message, section = str(e), f"{where}: {item.SECTION}"
        if message.startswith(section):  # the item's own section name, with its position
            message = f"{section}[{index}]{message[len(section):]}"
        raise item.ERROR(message) from None


class _Assignment(typing.NamedTuple):
    """One `override` setting: its path, the class overridden, where errors start, the flag that gave it (None:
    --set) and the error class."""

    path: str
    root: type
    where: str
    flag: typing.Optional[str]
    error: type


def _set_path(cls, values, parts, value, assignment):
    """Sets the field `parts` names in `values`, the mapping of a `cls`."""
    hints = typing.get_type_hints(cls)
    name, rest = parts[0], parts[1:]
    if name not in hints:
        _unknown_path(cls, name, assignment)
    kind = hints[name]
    plain, _ = _plain_kind(kind)
    item = section_items(plain)
    if not rest:
        values[name] = _parsed(value, kind, assignment)
    elif isinstance(plain, type) and issubclass(plain, Section):
        _set_path(plain, values[name], rest, value, assignment)
    elif item is not None and rest[0].isdigit():
        items = values[name]
        if int(rest[0]) >= len(items):
            raise assignment.error(f"{assignment.path}: {assignment.where} has {len(items)} {name}.")
        _set_path(item, items[int(rest[0])], rest[1:], value, assignment)
    elif item is not None:
        _set_every_item(item, values[name], name, rest, value, assignment)
    else:
        _unknown_path(cls, ".".join(parts), assignment)


def _set_every_item(item, items, name, parts, value, assignment):
    """Sets field `parts` of every item of the list `name`: `value` holds one value per item (a list; a list
    field's lists), or one value for a one-item list."""
    if parts[0] not in typing.get_type_hints(item):
        _unknown_path(item, parts[0], assignment)
    kind = typing.get_type_hints(item)[parts[0]]
    value = _parsed(value, kind, assignment)
    lists = section_items(kind) is not None
    one_value = not isinstance(value, (list, tuple)) or (
        lists and not (value and all(isinstance(v, (list, tuple)) for v in value)))
    per_item = [value] if one_value else list(value)
    if len(per_item) != len(items):
        labels = ", ".join(str(i.get("name", n)) for n, i in enumerate(items))
        one = name[:-1] if name.endswith("s") else name
        if assignment.flag:
            given, fix = f"{assignment.flag} was given {len(per_item)} time(s)", f"give it once per {one}, in order"
        else:
            given = f"--set {assignment.path}= gave {len(per_item)} {'list(s)' if lists else 'value(s)'}"
            fix = (f"give a list of {'lists' if lists else 'values'}, one per {one}, in order, or set one {one}'s "
                   f"with --set {name}.N.{parts[0]}=")
        raise assignment.error(f"{given} but {assignment.where} has {len(items)} {name} ({labels}): {fix}.")
    for one_item, v in zip(items, per_item):
        _set_path(item, one_item, parts, v, assignment._replace(flag=None))


def _parsed(value, kind, assignment):
    """A string value read as YAML unless the field (of type `kind`) is a string."""
    if isinstance(value, str) and _plain_kind(kind)[0] is not str:
        return parse_value(value, assignment.path, assignment.error)
    return value


def _unknown_path(cls, name, assignment):
    """Raises the error of a path whose part `name` names no field of `cls`: at the top, the unknown-key error a
    file gets; inside a section or a list's items, the error names the fields that are close to `name`."""
    names = {f.name for f in dataclasses.fields(cls)}
    meant = difflib.get_close_matches(name, names, n=2)
    if cls is assignment.root:
        meant = meant or _close_nested_paths(cls, name)
        hint = f" Did you mean {' or '.join(map(repr, meant))}?" if meant else ""
        raise assignment.error(f"{assignment.where}: unknown field(s) {[name]}; known fields are {sorted(names)}."
                               + hint)
    inside = assignment.path[:assignment.path.rindex(name)]
    hint = (f"did you mean {' or '.join(repr(inside + m) for m in meant)}?" if meant
            else f"its fields are {', '.join(sorted(names))}.")
    raise assignment.error(f"Unknown override {assignment.path!r}: use a {_human_name(assignment.root)} field as "
                           f"FIELD, SECTION.FIELD, LIST.FIELD (every item) or LIST.N.FIELD; {inside.rstrip('.')} has "
                           f"no field {name!r}: {hint}")


def _close_nested_paths(cls, name):
    """"SECTION.FIELD" paths of the nested sections of `cls` whose field is close to `name` (a field given without
    its section: `max_seq_lenght` -> `instances.max_seq_length`)."""
    hints = typing.get_type_hints(cls)
    paths = {}
    for field in dataclasses.fields(cls):
        kind, _ = _plain_kind(hints[field.name])
        if isinstance(kind, type) and issubclass(kind, Section):
            for inner in dataclasses.fields(kind):
                paths.setdefault(inner.name, f"{field.name}.{inner.name}")
    return [paths[m] for m in difflib.get_close_matches(name, paths, n=2)]


def _human_name(cls):
    """"finetuning recipe" for `FinetuningRecipe`."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", cls.__name__).lower()


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

"""Every configuration goes through one schema (bert_tf/config_schema.py): a mistyped key and a wrong type give the
same one-line error format whichever file or options object they are in."""

import dataclasses
import typing

import pytest

from bert_tf.config_schema import ConfigError, Section, parse_assignments
from bert_tf.errors import InputError
from bert_tf.finetuning.recipe import FinetuningRecipe, load_finetuning_recipe
from bert_tf.instances.options import InstanceOptions
from bert_tf.training.platforms import load_platforms
from bert_tf.training.recipe import load_recipe

UNKNOWN = r"^{where}: unknown field\(s\) \['{key}'\]; known fields are \[.*'{known}'.*\]\.$"
WRONG_TYPE = r"^{where}: {field}='{value}' must be {kind}: write it without quotes \({key}: {value}\)\.$"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def recipe_yaml(extra):
    return ("name: custom\nphases:\n  - {name: p, num_steps: 10, max_seq_length: 128, max_predictions_per_seq: 20}\n"
            "num_train_steps: 10\nnum_warmup_steps: 1\n" + extra)


def platforms_yaml(entry):
    return f"platforms:\n  gpu:\n    device: a100_40gb\n    mixed_precision: mixed_bfloat16\n{entry}"


def test_recipe_errors(tmp_path):
    unknown = UNKNOWN.format(where="custom.yaml", key="learning_rat", known="learning_rate")
    with pytest.raises(ConfigError, match=unknown):
        load_recipe(write(tmp_path, "custom.yaml", recipe_yaml("learning_rat: 0.1\n")))
    with pytest.raises(ConfigError, match=WRONG_TYPE.format(where="custom.yaml", field="train_batch_size", value="32",
                                                            kind="an integer", key="train_batch_size")):
        load_recipe(write(tmp_path, "custom.yaml", recipe_yaml("train_batch_size: '32'\n")))


def test_data_creation_options_errors():
    with pytest.raises(ConfigError, match=UNKNOWN.format(where="options", key="dupe_factr", known="dupe_factor")):
        InstanceOptions.from_dict({"dupe_factr": 5}, "options")
    with pytest.raises(ConfigError, match=WRONG_TYPE.format(where="options", field="dupe_factor", value="5",
                                                            kind="an integer", key="dupe_factor")):
        InstanceOptions.from_dict({"dupe_factor": "5"}, "options")


def test_platforms_file_errors(tmp_path):
    where = r"platforms.yaml: platforms.gpu.models.base"
    with pytest.raises(ConfigError, match=UNKNOWN.format(where=where, key="max_micro_batch",
                                                         known="max_micro_batch_size")):
        load_platforms(write(tmp_path, "platforms.yaml", platforms_yaml("    models: {base: {max_micro_batch: 8}}\n")))
    for value, shown in (("'8'", "'8'"), ("{128: '8'}", r"\{128: '8'\}")):  # by phase length, as integers
        with pytest.raises(ConfigError, match=rf"^{where}: max_micro_batch_size={shown} must map each phase length "
                                              r"to a positive integer, e.g. \{128: 64, 512: 16\}\.$"):
            load_platforms(write(tmp_path, "platforms.yaml",
                                 platforms_yaml(f"    models: {{base: {{max_micro_batch_size: {value}}}}}\n")))


def test_finetuning_recipe_errors(tmp_path):
    unknown = UNKNOWN.format(where="mrpc.yaml", key="learnig_rate", known="learning_rate")
    with pytest.raises(ConfigError, match=unknown):
        load_finetuning_recipe(write(tmp_path, "mrpc.yaml", "train_file: train.tsv\nlearnig_rate: 2.0e-5\n"))
    with pytest.raises(ConfigError, match=WRONG_TYPE.format(where="mrpc.yaml", field="train_batch_size", value="32",
                                                            kind="an integer", key="train_batch_size")):
        load_finetuning_recipe(write(tmp_path, "mrpc.yaml", "train_batch_size: '32'\n"))
    # --set goes through the same schema: a value of the wrong type, a field that does not exist.
    with pytest.raises(ConfigError, match=r"^--set: max_seq_length='long' must be an integer\.$"):
        FinetuningRecipe().override({"max_seq_length": "long"}, "--set")
    with pytest.raises(ConfigError, match=UNKNOWN.format(where="--set", key="epochs", known="num_train_epochs")):
        FinetuningRecipe().override({"epochs": "2"}, "--set")


def test_rules_and_nested_sections():
    @dataclasses.dataclass(frozen=True)
    class Inner(Section):
        SECTION = "inner"
        rate: float = 0.5

        def _rules(self):
            return (("rate", 0 < self.rate < 1, "must lie in (0, 1)"),)

    @dataclasses.dataclass(frozen=True)
    class Outer(Section):
        inner: Inner = Inner()
        names: tuple = ()

    assert Outer.from_dict({"inner": {"rate": 0.25}}, "outer.yaml").inner.rate == 0.25
    with pytest.raises(InputError, match=r"^outer.yaml: inner.rate=2 must lie in \(0, 1\)\.$"):
        Outer.from_dict({"inner": {"rate": 2}}, "outer.yaml")
    with pytest.raises(InputError, match=r"^outer.yaml: inner: unknown field\(s\) \['rat'\]"):
        Outer.from_dict({"inner": {"rat": 2}}, "outer.yaml")


def test_a_tuple_of_sections_is_built_from_a_list_of_mappings():
    @dataclasses.dataclass(frozen=True)
    class Item(Section):
        path: str
        weight: float = 1.0

        def _rules(self):
            return (("weight", self.weight > 0, "must be positive"),)

    @dataclasses.dataclass(frozen=True)
    class Outer(Section):
        items: typing.Tuple[Item, ...] = ()

    built = Outer.from_dict({"items": [{"path": "a"}, {"path": "b", "weight": 0.5}]}, "outer.yaml")
    assert built.items == (Item("a"), Item("b", 0.5)) and Outer.from_dict({}, "outer.yaml").items == ()
    cases = [
        ([{"path": "a"}, {"path": "b", "wieght": 2}],
         r"outer.yaml: items\[1\]: unknown field\(s\) \['wieght'\]; known fields are \['path', 'weight'\]\."),
        ([{"path": "a", "weight": -1}], r"outer.yaml: items\[0\]: weight=-1 must be positive\."),
        ([{"path": "a", "weight": "2"}], r"outer.yaml: items\[0\]: weight='2' must be a finite number: write it "
                                         r"without quotes \(weight: 2\)\."),
        ([{"weight": 2}], r"outer.yaml: items\[0\]: missing field\(s\) \['path'\]\."),
        (["a.txt"], r"outer.yaml: items\[0\] must be a mapping of fields, got 'a.txt'\."),
        ("a.txt", r"outer.yaml: items='a.txt' must be a list of mappings, each with the fields path, weight\."),
        ({"path": "a"}, r"outer.yaml: items=\{'path': 'a'\} must be a list of mappings, each with the fields path, "
                        r"weight\."),
    ]
    for items, message in cases:
        with pytest.raises(ConfigError, match=f"^{message}$"):
            Outer.from_dict({"items": items}, "outer.yaml")


def test_set_assignments():
    assert parse_assignments(["learning_rate=5e-5", "phases.1.max_seq_length=256"]) == {
        "learning_rate": "5e-5", "phases.1.max_seq_length": "256"}
    with pytest.raises(ConfigError, match=r"--set='learning_rate' must be FIELD=VALUE, e.g. --set=learning_rate"):
        parse_assignments(["learning_rate"])

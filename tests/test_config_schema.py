"""Every configuration goes through one schema (bert_tf/config_schema.py): a mistyped key and a wrong type give the
same one-line error format whichever file or options object they are in."""

import dataclasses
import json
import os
import re
import typing

import pytest
import yaml

from bert_tf.config import BertConfig
from bert_tf.config_schema import ConfigError, Section, parse_assignments
from bert_tf.errors import InputError
from bert_tf.file_format import FORMAT_VERSION
from bert_tf.finetuning.recipe import FinetuningRecipe, load_finetuning_recipe
from bert_tf.instances.options import InstanceOptions
from bert_tf.platforms.platforms_file import load_platforms
from bert_tf.training.recipe import load_recipe
from helpers import REPO

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


BEFORE = os.path.join(REPO, "tests", "fixtures", "files_of_version_0_1")


def test_a_model_dirs_recipe_yaml_written_before_loads_and_writes_back_its_values():
    path = os.path.join(BEFORE, "recipe.yaml")
    recipe = load_recipe(path)
    assert (recipe.learning_rate, recipe.train_batch_size, recipe.optimizer.beta_2) == (5e-5, 64, 0.98)
    assert recipe.model.overrides["hidden_dropout_prob"] == 0.0 and recipe.model.preset == "base"
    assert recipe.phases[0].input_sets == (("domain-*.tfrecord", 0.95), ("general-*.tfrecord", 0.05))
    with open(path, encoding="utf-8") as f:
        written = yaml.safe_load(f)
    # Every value the file holds is written back as it was, in its order (fields added since come with defaults).
    assert holds(yaml.safe_load(yaml.safe_dump(recipe.to_dict(), sort_keys=False)), written)


def holds(now, before):
    """Whether the mapping (or list) `now` holds every key of `before` with the same value, in the same order."""
    if isinstance(before, dict):
        keys = [key for key in now if key in before]
        return keys == list(before) and all(holds(now[key], before[key]) for key in before)
    if isinstance(before, list):
        return len(now) == len(before) and all(holds(a, b) for a, b in zip(now, before))
    return now == before


def test_a_recipe_of_the_first_releases_loads_with_todays_defaults_for_the_fields_added_since():
    recipe = load_recipe(os.path.join(BEFORE, "recipe_early.yaml"))
    assert (recipe.optimizer.name, recipe.learning_rate, recipe.mixed_precision, recipe.jit_compile) == (
        "lamb", 1e-4, "mixed_bfloat16", True)
    assert recipe.model.preset == "mini" and recipe.model.overrides == {"hidden_dropout_prob": 0.05}
    assert [(p.num_steps, p.train_batch_size, p.max_micro_batch_size) for p in recipe.phases] == [
        (80, None, 16), (40, 16, None)]
    assert recipe.dynamic_masking.do_whole_word_mask and recipe.eval.input_file == "heldout.tfrecord"
    assert (recipe.jit_compile_scope, recipe.all_reduce_dtype, recipe.async_checkpoints) == (
        "gradients", "float32", False)
    assert recipe.phases[0].mixed_inputs == () and recipe.max_seconds_per_loop == 5.0


def test_a_finetuning_config_and_a_platforms_file_written_before_load():
    recipe = load_finetuning_recipe(os.path.join(BEFORE, "finetune.yaml"))
    assert (recipe.text_b_column, recipe.learning_rate, recipe.num_train_epochs) == ("#2 String", 2e-5, 3)
    platforms = load_platforms(os.path.join(BEFORE, "platforms.yaml"))
    assert platforms["gpu80"].max_micro_batch_size("base", 512) == 32 and platforms["cpu"].device is None
    assert platforms["gpu80"].memory_source is None and platforms["gpu80"].jit_compile_scope == "step"


def test_bert_config_json_files_written_before_read_and_write_as_they_did():
    # This package's file (the exact GELU, so gelu_approximation says "none"): read, and written back with the same
    # keys and values, and the format version the files written since carry.
    path = os.path.join(BEFORE, "bert_config.json")
    config = BertConfig.from_json_file(path)
    assert config == BertConfig.preset("tiny", vocab_size=64, hidden_act="gelu")
    with open(path, encoding="utf-8") as f:
        assert json.loads(config.to_json_string()) == {**json.load(f), "format_version": FORMAT_VERSION}
    # A Google release (multilingual cased): "gelu" is the tanh form, the pooler keys are ignored.
    original = BertConfig.from_json_file(os.path.join(BEFORE, "original_bert_config.json"))
    assert (original.hidden_act, original.vocab_size, original.hidden_size) == ("gelu_tanh", 119547, 768)
    assert original.to_json_dict()["hidden_act"] == "gelu" and original.to_json_dict()["gelu_approximation"] == "tanh"


@pytest.mark.parametrize("path, meant", [
    ("optimizer.beta1", "'optimizer.beta_1' or 'optimizer.beta_2'"),
    ("model.hidden_sise", "'model.hidden_size' or 'model.hidden_act'"),
    ("phases.max_seq_lenght", "'phases.max_seq_length'"),
    ("phases.1.max_seq_lenght", "'phases.1.max_seq_length'"),
    ("eval.eval_batch", "'eval.eval_batch_size'"),
])
def test_a_mistyped_path_says_which_field_of_its_section_was_meant(path, meant):
    section = path.rsplit(".", 1)[0]
    with pytest.raises(ConfigError, match=rf"^Unknown override '{re.escape(path)}': use a recipe field .*; "
                                          rf"{re.escape(section)} has no field '{path.rsplit('.', 1)[1]}': "
                                          rf"did you mean {re.escape(meant)}\?$"):
        load_recipe("bert_base_paper").override({path: "1"})


def test_one_override_for_every_configuration():
    """The schema's `override` sets a `BertConfig`, the fine-tuning recipe and the pre-training recipe alike: string
    values read as YAML, a nested section's field, every phase's or one phase's field."""
    assert BertConfig.preset("tiny").override({"hidden_size": "64", "num_attention_heads": 4}).head_size == 16
    with pytest.raises(ConfigError, match=r"^BertConfig: hidden_size=64 is not divisible by num_attention_heads=3"):
        BertConfig.preset("tiny").override({"hidden_size": 64, "num_attention_heads": "3"})
    assert FinetuningRecipe().override({"learning_rate": "2e-5"}).learning_rate == 2e-5
    recipe = load_recipe("bert_base_paper").override({"model.hidden_size": "1024", "phases.max_seq_length": "[64, 128]",
                                                      "phases.0.max_predictions_per_seq": 10})
    assert recipe.model.overrides["hidden_size"] == 1024
    assert [(p.max_seq_length, p.max_predictions_per_seq) for p in recipe.phases] == [(64, 10), (128, 80)]

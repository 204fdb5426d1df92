"""The files the package writes for itself carry a `format_version` beside their own keys, and the files written
before it existed (tests/fixtures/files_of_version_0_1/, format 0) keep loading and resuming."""

import json
import os
import shutil

import pytest

from bert_tf.config import BertConfig
from bert_tf.errors import InputError
from bert_tf.file_format import FORMAT_VERSION
from bert_tf.model_dir import read_config, write_config
from bert_tf.training.recipe import load_recipe
from bert_tf.training.recipe_history import check_resumed_recipe, record_recipe, recorded_recipes
from helpers import REPO

BEFORE = os.path.join(REPO, "tests", "fixtures", "files_of_version_0_1")


def test_bert_config_json_keeps_the_original_keys_and_adds_the_format_version(tmp_path):
    config = BertConfig.preset("tiny")
    write_config(str(tmp_path), config)
    with open(tmp_path / "bert_config.json") as f:
        written = json.load(f)
    assert written["format_version"] == FORMAT_VERSION
    original = json.load(open(os.path.join(BEFORE, "original_bert_config.json")))
    assert set(original) - {"directionality", "pooler_fc_size", "pooler_num_attention_heads", "pooler_num_fc_layers",
                            "pooler_size_per_head", "pooler_type"} <= set(written)  # Google's names, all there
    assert read_config(str(tmp_path)) == config


def test_a_bert_config_json_without_the_version_loads(tmp_path):
    shutil.copy(os.path.join(BEFORE, "bert_config.json"), tmp_path / "bert_config.json")
    assert "format_version" not in json.load(open(tmp_path / "bert_config.json"))
    assert read_config(str(tmp_path)).hidden_size > 0


def test_a_recipe_yaml_from_before_the_version_resumes_without_a_recipe_change(tmp_path):
    shutil.copy(os.path.join(BEFORE, "recipe.yaml"), tmp_path / "recipe.yaml")
    recipe = load_recipe(str(tmp_path / "recipe.yaml"))
    assert check_resumed_recipe(str(tmp_path), recipe, step=10) == []
    assert record_recipe(str(tmp_path), recipe, step=10) is None  # no recipe-2.yaml for a format version
    assert recorded_recipes(str(tmp_path)) == [str(tmp_path / "recipe.yaml")]


def test_a_written_recipe_carries_the_version_and_reads_back(tmp_path):
    recipe = load_recipe("demo_cpu")
    path = record_recipe(str(tmp_path), recipe)
    assert open(path).read().startswith(f"format_version: {FORMAT_VERSION}\n")
    assert load_recipe(path) == recipe
    assert check_resumed_recipe(str(tmp_path), recipe, step=10) == []


def test_a_file_from_a_newer_version_says_to_upgrade(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text(f"format_version: {FORMAT_VERSION + 1}\n" + open(os.path.join(BEFORE, "recipe.yaml")).read())
    with pytest.raises(InputError, match=r"recipe.yaml has format_version 2, newer than this bert_tf reads \(1\): "
                                         r"upgrade bert_tf"):
        load_recipe(str(path))

"""Quiet and true output: each phase's own batch in the training summary, docs that match
`load_encoder_from_saved_model`, and a lean default install with the heavy extras opt-in (`make setup` keeps them),
`tensorboard` among them. (That bert-export prints no TensorFlow INFO lines is checked in test_serving, on the
export its fixture runs.)"""

import ast
import os
import re
import types

import pytest

from bert_tf.config import BertConfig
from bert_tf.training.recipe import load_recipe
from bert_tf.training.report import summary_lines
from helpers import REPO

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def setup_lists():
    """setup.py's top-level literal assignments, by name."""
    tree = ast.parse(open(os.path.join(REPO, "setup.py"), encoding="utf-8").read())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.List, ast.Constant))}


def test_training_summary_gives_each_phases_batch():
    recipe = load_recipe("small_fast")
    layout = types.SimpleNamespace(num_replicas=1, num_workers=1, num_input_pipelines=1)
    lines = summary_lines(recipe, BertConfig.preset("tiny"), 20000, [], None, 60.0, layout, "runs/small")
    text = "\n".join(lines)
    assert "phases: seq32 18000 steps at 32/10, global batch 128, seq128 2000 steps at 128/40, global batch 32" in text
    assert "global batch 32," not in text.split("phases:")[0]  # no single batch for a run of two


def test_export_readme_describes_the_three_values_load_encoder_from_saved_model_returns():
    text = " ".join(open(os.path.join(REPO, "export", "README.md"), encoding="utf-8").read().split())
    assert ("encoder, vocab_file, do_lower_case = bert_tf.serving.load_encoder_from_saved_model(" in text
            and "returns three values" in text)


def test_default_install_is_lean_and_make_setup_keeps_the_developer_set():
    lists = setup_lists()
    source = open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()
    default = {r.split("=")[0].split(">")[0].split("<")[0].split("!")[0] for r in
               [lists["TENSORFLOW"]] + lists["TENSORFLOW_DEPENDENT"] + lists["REQUIRES_WITHOUT_TENSORFLOW"]}
    assert default == {"tensorflow", "tensorflow-text", "keras", "absl-py", "numpy", "pyyaml", "safetensors",
                       "matplotlib", "tqdm", "regex"}
    for extra, package in (("tensorboard", "tensorboard"), ("tfds", "tensorflow-datasets"),
                           ("keras_hub", "keras-hub"), ("beam", "apache-beam"), ("transformers", "torch")):
        assert re.search(rf'"{extra}": \[[^\]]*"{package}[^"]*"', source), extra
    makefile = open(os.path.join(REPO, "Makefile"), encoding="utf-8").read()
    extras = re.search(r"^EXTRAS \?= (\S+)$", makefile, re.M).group(1).split(",")
    assert {"test", "corpus", "serving", "hub", "beam", "transformers", "tensorboard", "tfds", "keras_hub"} <= set(
        extras)
    readme = " ".join(open(os.path.join(REPO, "README.md"), encoding="utf-8").read().split())
    assert 'pip install ".[tensorboard]"' in readme and "`pip install .` is the lean install" in readme

"""Importing the package, its layers, the optimizers and the FLOP formula needs only Keras (issue: the GPU machines
have JAX and no TensorFlow). Each check runs in a fresh interpreter, where nothing has imported TensorFlow yet."""

import os
import subprocess
import sys

import pytest

from helpers import REPO

# Modules that must import without TensorFlow, and what each check then uses.
KERAS_ONLY = [
    ("import bert_tf, bert_tf.training", "bert_tf.__version__"),
    ("import bert_tf.config", "bert_tf.config.BertConfig.preset('tiny').hidden_size"),
    ("from bert_tf.accelerators.flops import training_flops_per_sequence\nfrom bert_tf.config import BertConfig",
     "training_flops_per_sequence(BertConfig.preset('base'), 128, 20)"),
]


@pytest.mark.parametrize("statement, use", KERAS_ONLY)
def test_imports_without_tensorflow(statement, use):
    # A finder that refuses TensorFlow: the import fails loudly instead of passing silently.
    script = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('tensorflow', 'tensorflow_text'):\n"
        "            raise ImportError(f'{name} imported')\n"
        "sys.meta_path.insert(0, Refuse())\n"
        f"{statement}\n"
        f"print({use})\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


CONFIGS_WITHOUT_TENSORFLOW = """
import glob, os, sys
from bert_tf.config import BertConfig
from bert_tf.finetuning.recipe import FinetuningRecipe, load_finetuning_recipe
from bert_tf.platforms.platforms_file import load_platforms
from bert_tf.training.platforms import apply_platform
from bert_tf.training.recipe import load_recipe, recipe_names
before = os.path.join("tests", "fixtures", "files_of_version_0_1")
# Every shipped recipe and the recipes written before: loaded, checked, and overridden by every kind of path.
recipes = recipe_names() + sorted(glob.glob(os.path.join(before, "recipe*.yaml")))
for name in recipes:
    recipe = load_recipe(name)
    n = len(recipe.phases)
    recipe = recipe.override({"optimizer.beta_1": "0.95", "phases.0.max_seq_length": 64, "model.hidden_size": 64,
                              "phases.input_file": [f"p{i}-*" for i in range(n)] if n > 1 else "p0-*"})
    recipe = recipe.override({"num_train_steps": 10 * n, "num_warmup_steps": 1, "optimizer.name": "lamb"})
    assert recipe.optimizer.beta_1 == 0.95 and recipe.phases[0].max_seq_length == 64, name
    assert recipe.model.overrides["hidden_size"] == 64 and recipe.optimizer.name == "lamb", name
    assert sum(p.num_steps for p in recipe.phases) == 10 * n and recipe.phases[-1].input_file == f"p{n - 1}-*", name
    try:
        recipe.override({"optimizer.beta1": 0.9})
        raise AssertionError("a mistyped path was taken")
    except ValueError as e:
        assert "did you mean 'optimizer.beta_1'" in str(e), e
# The platforms file: every platform applied to the paper's recipe it has settings for.
platforms = load_platforms()
for name, platform in platforms.items():
    recipe = apply_platform(load_recipe("bert_large_paper" if "large" in platform.models else "demo_cpu"), name)
    assert recipe.platform == name and recipe.mixed_precision == platform.mixed_precision, name
assert load_platforms(os.path.join(before, "platforms.yaml"))["gpu80"].max_micro_batch_size("base", 128) == 128
# A fine-tuning config, and the command line's path: flags and --set through the one override.
finetuning = load_finetuning_recipe(os.path.join(before, "finetune.yaml")).override({"num_train_epochs": "2"})
assert finetuning.learning_rate == 2e-5 and finetuning.num_train_epochs == 2
import dataclasses
from bert_tf.cli import pretrain
from bert_tf.cli.command import compose
from bert_tf.cli.flag_parsing import parse_command_line

argv = ["bert-pretrain", "--config=bert_base_paper", "--model_dir=run", "--learning_rate=3e-4", "--input_file=a",
        "--input_file=b", "--platform=a100_80gb", "--set=phases.1.max_seq_length=256"]
command = dataclasses.replace(pretrain.COMMAND, check=None)  # the input files "a" and "b" do not exist
recipe = compose(command, parse_command_line(command, argv)[0]).recipe
assert recipe.learning_rate == 3e-4 and [p.input_file for p in recipe.phases] == ["a", "b"], recipe
assert recipe.phases[1].max_seq_length == 256 and recipe.mixed_precision == "mixed_bfloat16"
# bert_config.json files: this package's and a Google release's.
assert BertConfig.from_json_file(os.path.join(before, "original_bert_config.json")).hidden_act == "gelu_tanh"
config = BertConfig.from_json_file(os.path.join(before, "bert_config.json"))
assert config.override({"vocab_size": "32"}).vocab_size == 32
assert "tensorflow" not in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None]
print(len(recipe_names()), len(platforms), len(recipes))
"""


def test_configs_load_check_and_take_overrides_without_tensorflow():
    """Every shipped recipe, the platforms file (every platform applied), a fine-tuning config, the files written
    by version 0.1 and a command line's flags and --set: loaded, checked and overridden in an interpreter where
    TensorFlow cannot be imported (a command parses its flags and config before it starts)."""
    script = "import sys\nsys.modules['tensorflow'] = None\nsys.modules['tensorflow_text'] = None\n" + \
        CONFIGS_WITHOUT_TENSORFLOW
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    recipes = [name for name in os.listdir(os.path.join(REPO, "configs", "pretrain")) if name.endswith(".yaml")]
    assert int(done.stdout.split()[0]) == len(recipes) >= 5, done.stdout

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
import os, tempfile
from bert_tf.finetuning.recipe import FinetuningRecipe, load_finetuning_recipe
from bert_tf.training.platforms import apply_platform, load_platforms
from bert_tf.training.recipe import load_recipe, recipe_names
for name in recipe_names():
    recipe = load_recipe(name).override({"optimizer.beta_1": 0.95, "phases.0.max_seq_length": 64})
    assert recipe.optimizer.beta_1 == 0.95 and recipe.phases[0].max_seq_length == 64, name
platforms = load_platforms()
assert apply_platform(load_recipe("bert_base_paper"), "h100_80gb").mixed_precision == "mixed_bfloat16"
path = os.path.join(tempfile.mkdtemp(), "glue.yaml")
with open(path, "w") as f:
    f.write("learning_rate: 3.0e-5\\n")
finetuning = load_finetuning_recipe(path).override({"num_train_epochs": 2}, "--set")
assert finetuning.learning_rate == 3e-5 and finetuning.num_train_epochs == 2
print(len(recipe_names()), len(platforms))
"""


def test_configs_load_check_and_take_overrides_without_tensorflow():
    """Every shipped recipe, the platforms file and a fine-tuning config: loaded, checked and overridden in an
    interpreter where TensorFlow cannot be imported (a command parses its flags and config before it starts)."""
    script = "import sys\nsys.modules['tensorflow'] = None\nsys.modules['tensorflow_text'] = None\n" + \
        CONFIGS_WITHOUT_TENSORFLOW
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    recipes = [name for name in os.listdir(os.path.join(REPO, "configs", "pretrain")) if name.endswith(".yaml")]
    assert int(done.stdout.split()[0]) == len(recipes) >= 5, done.stdout

"""Importing the package, its layers, the optimizers and the FLOP formula needs only Keras (issue: the GPU machines
have JAX and no TensorFlow). Each check runs in a fresh interpreter, where nothing has imported TensorFlow yet."""

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

"""docs/serving.md's Python example for a fine-tuned classifier runs as written, on models exported as
`bert-finetune` exports them, and names each text's label from `assets/labels.txt`."""

import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest

from bert_tf.finetuning.classifier import BertClassifier
from bert_tf.serving import CLASSIFIER, PREPROCESSING, export_classifier, export_preprocessing, version_dir
from helpers import REPO, tiny_config
from pretraining_records import write_vocab

pytestmark = pytest.mark.large  # two exports and a TensorFlow process: ~13 s of CPU

SECTION = "## A fine-tuned classifier from Python, with its labels"
LABELS = ["business", "entertainment", "sport"]


def example_block():
    with open(os.path.join(REPO, "docs", "serving.md"), encoding="utf-8") as f:
        section = f.read().split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_classifier_example_prints_each_texts_label(tmp_path):
    keras.utils.set_random_seed(5)
    classifier = BertClassifier(tiny_config(), num_classes=len(LABELS))
    classifier({name: np.ones((1, 8), np.int32) for name in ("input_word_ids", "input_mask", "input_type_ids")})
    # A bias far above every logit makes "sport" (id 2) the answer for any text, at probability 1.
    classifier.logits.bias.assign(np.array([0.0, 0.0, 50.0], np.float32))
    finetuned = tmp_path / "my_bert" / "finetuned"
    export_classifier(classifier, version_dir(str(finetuned), CLASSIFIER), LABELS)
    # At the model's length, as bert-finetune exports it (--max_seq_length; the tiny model has 32 positions).
    export_preprocessing(version_dir(str(finetuned), PREPROCESSING), write_vocab(tmp_path / "vocab.txt"),
                         seq_length=32, max_seq_length=32)

    done = subprocess.run([sys.executable, "-c", example_block()], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["sport 1.000  The film won the award for best picture.",
                                        "sport 1.000  Shares fell 3% in early trading."], done.stdout

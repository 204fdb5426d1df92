"""`bert-fill-mask` and `MaskFiller`: the top-k words for each [MASK] of raw text, through the exported
SavedModels, equal to masking the same positions of the preprocessing model's ids by hand. The SavedModels are the
small demo's (conftest's `small_demo`): what `bert-export --model_dir` wrote for a trained model."""

import re

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.serving import MaskFiller
from helpers import run_cli

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

# Words of the demo's vocab, each one WordPiece: the packed ids of TEXT are [CLS] and the ... [SEP], so the masks
# sit at positions 3 and 5.
TEXT, FILLED, POSITIONS = "and the [MASK] said [MASK]", "and the lord said god", [3, 5]


@pytest.fixture(scope="module")
def exported(small_demo):
    """The exported folder of the small demo: `encoder_mlm` and `preprocessing` are what filling masks reads."""
    return small_demo.output_dir / "exported"


def by_hand(exported, text, positions):
    """Softmax of the mlm signature at `positions` of `text` packed by the preprocessing model, those positions'
    ids replaced by [MASK]'s: what filling the masks must give."""
    preprocessing = tf.saved_model.load(str(exported / "preprocessing" / "1"))
    mlm = tf.saved_model.load(str(exported / "encoder_mlm" / "1")).signatures["mlm"]
    inputs = {k: v.numpy() for k, v in preprocessing.signatures["serving_default"](text=tf.constant([text])).items()}
    inputs["input_word_ids"][0, positions] = int(preprocessing.tokenize.get_special_tokens_dict()["mask_id"])
    logits = mlm(masked_lm_positions=tf.constant([positions], tf.int32),
                 **{k: tf.constant(v) for k, v in inputs.items()})["mlm_logits"].numpy()[0].astype(np.float64)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    return probabilities / probabilities.sum(-1, keepdims=True)


def test_fill_mask_equals_masking_the_preprocessed_ids_by_hand(exported):
    filler = MaskFiller(str(exported))
    assert filler.wordpieces("[MASK]") != ["[MASK]"]  # why the text is cut at each [MASK]
    assert all(filler.wordpieces(word) == [word] for word in FILLED.split())
    predictions = filler(TEXT, top_k=4)
    expected = by_hand(exported, FILLED, POSITIONS)
    assert len(predictions) == 2
    for words, probabilities in zip(predictions, expected):
        assert [token for token, _ in words] == [filler.vocab[i] for i in np.argsort(-probabilities,
                                                                                     kind="stable")[:4]]
        assert [p for _, p in words] == pytest.approx(sorted(probabilities, reverse=True)[:4], abs=1e-6)


def test_bert_fill_mask_prints_the_top_k_of_each_mask(exported):
    done = run_cli("fill_mask", f"--saved_model={exported}", f"--text={TEXT}", "--top_k=3")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["[MASK] 1", "[MASK] 2"], done.stdout
    expected = MaskFiller(str(exported))(TEXT, top_k=3)
    for line, words in zip(lines, expected):
        shown = re.findall(r"(\S+) (\d\.\d{4})", line.split(": ", 1)[1])
        assert [(token, float(p)) for token, p in shown] == [(token, round(p, 4)) for token, p in words]

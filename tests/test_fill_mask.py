"""`bert-fill-mask` and `MaskFiller`: the top-k words for each [MASK] of raw text, through the exported
SavedModels, equal to masking the same positions of the preprocessing model's ids by hand."""

import re

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertPretrainer
from bert_tf.serving import ENCODER_MLM, PREPROCESSING, MaskFiller, export_encoder, export_preprocessing, version_dir
from helpers import run_cli, tiny_config
from pretraining_records import write_vocab


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """What `bert-export --model_dir` writes that filling masks reads (`encoder_mlm` and `preprocessing`) for a
    random tiny model."""
    root = tmp_path_factory.mktemp("fill_mask")
    vocab = write_vocab(root / "vocab.txt")
    pretrainer = BertPretrainer(tiny_config())
    exported = root / "exported"
    export_encoder(pretrainer, version_dir(str(exported), ENCODER_MLM), vocab, with_mlm=True)
    export_preprocessing(version_dir(str(exported), PREPROCESSING), vocab, seq_length=16,
                         max_seq_length=pretrainer.config.max_position_embeddings)
    return exported


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
    predictions = filler("w1 w2 [MASK] w3 [MASK]", top_k=4)
    expected = by_hand(exported, "w1 w2 w9 w3 w7", [3, 5])  # [CLS] w1 w2 _ w3 _ [SEP]
    assert len(predictions) == 2
    for words, probabilities in zip(predictions, expected):
        assert [token for token, _ in words] == [filler.vocab[i] for i in np.argsort(-probabilities,
                                                                                     kind="stable")[:4]]
        assert [p for _, p in words] == pytest.approx(sorted(probabilities, reverse=True)[:4], abs=1e-6)


def test_bert_fill_mask_prints_the_top_k_of_each_mask(exported):
    done = run_cli("fill_mask", f"--saved_model={exported}", "--text=w1 w2 [MASK] w3 [MASK]", "--top_k=3")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["[MASK] 1", "[MASK] 2"], done.stdout
    expected = MaskFiller(str(exported))("w1 w2 [MASK] w3 [MASK]", top_k=3)
    for line, words in zip(lines, expected):
        shown = re.findall(r"(\S+) (\d\.\d{4})", line.split(": ", 1)[1])
        assert [(token, float(p)) for token, p in shown] == [(token, round(p, 4)) for token, p in words]

"""The model directory API on tf.io.gfile: written and read back through a filesystem that is not the local one
(`ram://`, TensorFlow's in-memory filesystem, standing in for gs://), and what its files say."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import model_dir
from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.training.pretraining import run_pretraining
from bert_tf.training.recipe import Recipe
from helpers import tiny_config, tiny_model_section
from pretraining_records import write_records, write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

SEQ, PRED = 16, 4
CONFIG = tiny_config(num_hidden_layers=1, max_position_embeddings=SEQ)  # as the run's tiny_model_section


def features(vocab_size=64, batch=2):
    rng = np.random.default_rng(0)
    return {"input_word_ids": tf.constant(rng.integers(5, vocab_size, (batch, SEQ)), tf.int32),
            "input_mask": tf.ones((batch, SEQ), tf.int32), "input_type_ids": tf.zeros((batch, SEQ), tf.int32),
            "masked_lm_positions": tf.constant([[1, 2, 3, 4]] * batch, tf.int32)}


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_tanh"])
def test_write_and_load_through_a_non_local_filesystem(tmp_path, hidden_act):
    root = f"ram://model_dir_{hidden_act}"
    vocab = write_vocab(tmp_path / "vocab.txt", 64)
    model = BertPretrainer(CONFIG.replace(hidden_act=hidden_act))
    expected = model(features())
    path = model_dir.write_model_dir(root, model, vocab_file=vocab, step=7)
    assert path == f"{root}/ckpt-7" and not os.path.exists(root.replace("ram://", ""))
    assert model_dir.read_config(root) == model.config
    with tf.io.gfile.GFile(model_dir.vocab_path(root)) as f, open(vocab) as g:
        assert f.read() == g.read()
    loaded = model_dir.load_pretrainer(root)
    actual = loaded(features())
    np.testing.assert_array_equal(actual["mlm_logits"].numpy(), expected["mlm_logits"].numpy())
    encoder = model_dir.load_encoder(root)
    assert encoder.config.hidden_act == hidden_act
    # No temporary files are left next to the written ones.
    assert not [name for name in tf.io.gfile.listdir(root) if ".partial" in name]


def test_missing_config_and_checkpoint_name_the_directory():
    with pytest.raises(FileNotFoundError, match="No bert_config.json in ram://empty_dir: pass a directory"):
        model_dir.read_config("ram://empty_dir")
    tf.io.gfile.makedirs("ram://config_only")
    model_dir.write_config("ram://config_only", CONFIG)
    with pytest.raises(FileNotFoundError, match="No checkpoint in ram://config_only"):
        model_dir.load_pretrainer("ram://config_only")


def test_bert_pretrain_run_on_ram_filesystem_loads_back(tmp_path):
    """A short real pre-training run whose --model_dir is on ram://, read back by load_pretrainer."""
    train = write_records(tmp_path / "train.tfrecord", 32, SEQ, PRED, seed=0)
    vocab = write_vocab(tmp_path / "vocab.txt")
    recipe = Recipe.from_dict({
        "name": "ram_test", "model": tiny_model_section(num_hidden_layers=1, max_position_embeddings=SEQ),
        "vocab_file": vocab, "train_batch_size": 4, "num_train_steps": 4, "num_warmup_steps": 1,
        "save_checkpoints_steps": 2, "iterations_per_loop": 2,
        "phases": [{"name": "p", "num_steps": 4, "max_seq_length": SEQ, "max_predictions_per_seq": PRED,
                    "input_file": train}]})
    result = run_pretraining(recipe, "ram://pretrain_run", peak_tflops=1.0)
    assert result.completed and result.checkpoint == "ram://pretrain_run/ckpt-4"
    model = model_dir.load_pretrainer("ram://pretrain_run")
    assert model.config == model_dir.read_config("ram://pretrain_run")
    assert model_dir.vocab_path("ram://pretrain_run") == "ram://pretrain_run/vocab.txt"
    with tf.io.gfile.GFile("ram://pretrain_run/bert_config.json") as f:
        assert json.load(f)["hidden_act"] == "gelu"

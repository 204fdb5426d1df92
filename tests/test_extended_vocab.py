"""Continuing a checkpoint with an extended vocab: every existing row is the checkpoint's, each new row of the word
embeddings and masked-LM output bias starts from the mean of its old pieces' rows, shapes are kept when [unused]
rows are filled and grow when rows are appended; and the whole path from a converted HF checkpoint to an export
and back to HF."""

import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import logging

from bert_tf import BertPretrainer
from bert_tf.errors import InputError
from bert_tf.model_dir import load_pretrainer, write_model_dir
from bert_tf.text.vocab_learning import write_vocab
from bert_tf.training.checkpointing import restore_model_weights
from bert_tf.training.extended_vocab_restore import grown_vocab_size
from bert_tf.training.pretraining import resolve_bert_config
from bert_tf.training.recipe import load_recipe
from helpers import run_cli, tiny_config

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
# 64 tokens: [unused] rows before [UNK] as in the released vocab, words and their "##" pieces.
WORDS = ["the", "king", "and", "his", "sons", "reigned", ".", "je", "##hosh", "##ap", "##hat", "beg", "##at",
         "ram", "##s", "in", "city"]
BASE = (["[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
        + [f"w{i}" for i in range(64 - 8 - len(WORDS))])
ID = {t: i for i, t in enumerate(BASE)}


def random_weights(model, seed):
    """Every weight non-trivial (fresh biases are zeros), so a row copied from the wrong place shows."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        if "seed_generator" not in variable.path:
            variable.assign(keras.ops.convert_to_numpy(variable) + rng.normal(0, 0.1, variable.shape))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoint")
    keras.utils.set_random_seed(1)
    model = BertPretrainer(tiny_config(vocab_size=64))
    random_weights(model, seed=1)
    write_vocab(BASE, root / "vocab.txt")
    write_model_dir(str(root / "model"), model, str(root / "vocab.txt"))
    write_model_dir(str(root / "encoder_only"), model, str(root / "vocab.txt"), heads=False)
    return root, {v.path: v.numpy() for v in model.weights}


def extended(root, name, tokens):
    write_vocab(tokens, root / name)
    return str(root / name)


def restored(directory, vocab_file, vocab_size):
    model = BertPretrainer(tiny_config(vocab_size=vocab_size))
    restore_model_weights(model, directory, vocab_file)
    return {v.path: v.numpy() for v in model.weights}


def mean(table, *tokens):
    return table[[ID[t] for t in tokens]].mean(axis=0)


def test_unused_rows_keep_the_shape_and_start_from_their_pieces(checkpoint, tmp_path):
    root, source = checkpoint
    tokens = list(BASE)
    tokens[2], tokens[3] = "jehoshaphat", "begat"
    got = restored(str(root / "model"), extended(tmp_path, "vocab.txt", tokens), 64)
    assert grown_vocab_size(str(root / "model"), str(tmp_path / "vocab.txt")) is None
    for name in ("bert/embeddings/word_embeddings", "cls/predictions/output_bias"):
        table, want = got[name], source[name]
        assert table.shape == want.shape
        np.testing.assert_array_equal(np.delete(table, [2, 3], axis=0), np.delete(want, [2, 3], axis=0))
        np.testing.assert_allclose(table[2], mean(want, "je", "##hosh", "##ap", "##hat"), rtol=1e-6)
        np.testing.assert_allclose(table[3], mean(want, "beg", "##at"), rtol=1e-6)
        assert not np.allclose(table[2], want[2])  # the [unused1] row is replaced
    for name, value in source.items():
        if "seed_generator" not in name and name not in ("bert/embeddings/word_embeddings",
                                                         "cls/predictions/output_bias"):
            np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_appended_rows_grow_the_table_and_the_bias(checkpoint, tmp_path):
    root, source = checkpoint
    tokens = BASE[:1] + ["rams"] + BASE[2:] + ["jehoshaphat", "[MY_TOKEN]", "begat"]
    vocab = extended(tmp_path, "vocab.txt", tokens)
    assert grown_vocab_size(str(root / "model"), vocab) == 67
    got = restored(str(root / "model"), vocab, 67)
    for name in ("bert/embeddings/word_embeddings", "cls/predictions/output_bias"):
        table, want = got[name], source[name]
        assert table.shape[0] == 67 and want.shape[0] == 64
        np.testing.assert_array_equal(np.delete(table[:64], 1, axis=0), np.delete(want, 1, axis=0))
        np.testing.assert_allclose(table[1], mean(want, "ram", "##s"), rtol=1e-6)
        np.testing.assert_allclose(table[64], mean(want, "je", "##hosh", "##ap", "##hat"), rtol=1e-6)
        np.testing.assert_allclose(table[66], mean(want, "beg", "##at"), rtol=1e-6)
    # A special token's appended row keeps its fresh initialization: truncated normal for the table, 0 for bias.
    assert got["cls/predictions/output_bias"][65] == 0
    assert 0 < np.abs(got["bert/embeddings/word_embeddings"][65]).max() <= 0.04
    np.testing.assert_array_equal(got["bert/encoder/layer_0/attention/self/query/kernel"],
                                  source["bert/encoder/layer_0/attention/self/query/kernel"])


def test_an_encoder_only_checkpoint_warns_and_leaves_the_fresh_bias(checkpoint, tmp_path):
    root, source = checkpoint
    vocab = extended(tmp_path, "vocab.txt", BASE + ["begat"])
    warnings = []
    logging.get_absl_logger().addFilter(lambda record: warnings.append(record.getMessage()) or True)
    got = restored(str(root / "encoder_only"), vocab, 65)
    assert any("has no pre-training heads" in w for w in warnings)
    np.testing.assert_array_equal(got["cls/predictions/output_bias"], np.zeros(65, np.float32))
    np.testing.assert_allclose(got["bert/embeddings/word_embeddings"][64],
                               mean(source["bert/embeddings/word_embeddings"], "beg", "##at"), rtol=1e-6)


def test_a_vocab_that_moves_a_token_is_refused(checkpoint, tmp_path):
    root, _ = checkpoint
    tokens = list(BASE)
    tokens[ID["king"]] = "queen"
    with pytest.raises(InputError, match=r"line 10 is 'queen' where the checkpoint's .* has 'king'"):
        restored(str(root / "model"), extended(tmp_path, "vocab.txt", tokens), 64)


@pytest.mark.large
def test_a_converted_hf_checkpoint_continues_with_an_extended_vocab_exports_and_converts_back(tmp_path):
    """The user's path, command by command: bert-convert --from hf (a BertForPreTraining with its heads),
    bert-vocab --extend (two [unused] rows filled, one row appended), bert-create-pretraining-data, bert-pretrain
    --init_checkpoint, bert-export, bert-convert --to hf, loaded by transformers."""
    import torch
    import transformers

    hf = tmp_path / "hf"
    hf.mkdir()
    for name in ("config.json", "model.safetensors"):  # the weights of the fixture, with our 64 tokens
        shutil.copy(os.path.join(FIXTURES, "hf_tiny_pretraining", name), hf / name)
    write_vocab(BASE, hf / "vocab.txt")
    source = transformers.BertForPreTraining.from_pretrained(str(hf)).state_dict()
    embeddings = source["bert.embeddings.word_embeddings.weight"].numpy()
    bias = source["cls.predictions.bias"].numpy()

    def cli(*args):
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    cli("convert", "--from=hf", f"--input={hf}", f"--output={tmp_path / 'converted'}")
    corpus = tmp_path / "domain.txt"
    corpus.write_text("".join(f"jehoshaphat reigned in the city {i % 7}.\nhis sons and rams begat sons.\n"
                              f"the king begat jehoshaphat.\n\n" for i in range(40)))
    vocab = tmp_path / "domain_vocab.txt"
    out = cli("vocab", f"--extend={tmp_path / 'converted' / 'vocab.txt'}", f"--input_file={corpus}",
              f"--output_file={vocab}", "--keep_unused=1", "--max_new_tokens=3", "--min_frequency=2")
    # jehoshaphat 80 x 3, begat 80 x 1, rams 40 x 1 (the digits are [UNK] in this vocab and not candidates).
    assert [line.split("\t")[:2] for line in out.splitlines() if line[:1].isdigit()] == [
        ["2", "jehoshaphat"], ["3", "begat"], ["64", "rams"]]
    cli("create_pretraining_data", f"--input_file={corpus}", f"--output_file={tmp_path / 'train.tfrecord'}",
        f"--vocab_file={vocab}", "--max_seq_length=16", "--max_predictions_per_seq=3", "--dupe_factor=1")
    # One step at learning rate 0 (step 0 of the warmup): the weights are the initialised ones.
    cli("pretrain", "--config=demo_cpu", f"--model_dir={tmp_path / 'run'}",
        f"--input_file={tmp_path / 'train.tfrecord'}", f"--init_checkpoint={tmp_path / 'converted'}",
        f"--vocab_file={vocab}", "--max_seq_length=16", "--max_predictions_per_seq=3", "--train_batch_size=4",
        "--num_train_steps=1", "--num_warmup_steps=1", "--iterations_per_loop=1", "--peak_tflops=1")
    with open(tmp_path / "run" / "bert_config.json") as f:
        assert json.load(f)["vocab_size"] == 65
    model = load_pretrainer(str(tmp_path / "run"))
    table, got_bias = model.encoder.word_embeddings.numpy(), model.masked_lm.output_bias.numpy()
    for row, pieces in {2: ["je", "##hosh", "##ap", "##hat"], 3: ["beg", "##at"], 64: ["ram", "##s"]}.items():
        np.testing.assert_allclose(table[row], mean(embeddings, *pieces), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got_bias[row], mean(bias, *pieces), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(table[4:64], embeddings[4:64], rtol=1e-6)

    cli("export", f"--model_dir={tmp_path / 'run'}", f"--output_dir={tmp_path / 'export'}", "--max_seq_length=16")
    exported = tf.saved_model.load(str(tmp_path / "export" / "encoder" / "1"))
    [exported_table] = [v for v in exported.variables if "word_embeddings" in v.name]
    assert tuple(exported_table.shape) == (65, 32)
    cli("convert", "--to=hf", f"--input={tmp_path / 'run'}", f"--output={tmp_path / 'hf_out'}")
    back = transformers.BertForPreTraining.from_pretrained(str(tmp_path / "hf_out"))
    assert back.config.vocab_size == 65
    assert open(tmp_path / "hf_out" / "vocab.txt").read().split("\n")[64] == "rams"
    np.testing.assert_allclose(back.bert.embeddings.word_embeddings.weight.detach().numpy(), table, rtol=1e-6)
    np.testing.assert_allclose(back.cls.predictions.bias.detach().numpy(), got_bias, rtol=1e-6)
    with torch.no_grad():
        logits = back(input_ids=torch.tensor([[ID["[CLS]"], 64, 2, ID["[SEP]"]]])).prediction_logits
    assert tuple(logits.shape) == (1, 4, 65)


def test_continue_domain_recipe_takes_the_checkpoints_model_with_the_grown_vocab(checkpoint, tmp_path):
    root, _ = checkpoint
    recipe = load_recipe("continue_domain")
    assert (recipe.learning_rate, recipe.num_warmup_steps, recipe.num_train_steps) == (2e-5, 1000, 100000)
    assert (recipe.train_batch_size, recipe.phases[0].max_seq_length) == (256, 128)
    # The tiny model has 32 positions.
    recipe = recipe.override({"phases.max_seq_length": [16], "phases.max_predictions_per_seq": [3]})
    grown = recipe.override({"init_checkpoint": str(root / "model"),
                             "vocab_file": extended(tmp_path, "grown.txt", BASE + ["begat", "jehoshaphat"])})
    config = resolve_bert_config(grown)
    assert (config.vocab_size, config.hidden_size) == (66, tiny_config().hidden_size)
    moved = list(BASE) + ["begat"]
    moved[ID["city"]] = "town"
    with pytest.raises(InputError, match="line 25 is 'town'"):
        resolve_bert_config(recipe.override({"init_checkpoint": str(root / "model"),
                                             "vocab_file": extended(tmp_path, "moved.txt", moved)}))

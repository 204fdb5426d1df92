"""Every layer and model of bert_tf/modeling through the same checks (tests/layer_test_case.py): config and
`.keras` round trips, mixed precision, variable sequence length."""

import importlib
import inspect
import pkgutil

import keras
import numpy as np
import pytest

import bert_tf.modeling as modeling
from bert_tf.modeling.dropout import BertDropout
from helpers import tiny_config
from layer_test_case import run_layer_test

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

HIDDEN, VOCAB = 8, 30
RNG = np.random.default_rng(0)


def hidden_states(length):
    return (np.random.default_rng(length).normal(size=(2, length, HIDDEN)).astype("float32"),)


def ids(length):
    return np.random.default_rng(length).integers(1, VOCAB, (2, length)).astype("int32")


def encoder_inputs(length):
    mask = np.ones((2, length), "int32")
    mask[0, -2:] = 0
    return {"input_word_ids": ids(length) * mask, "input_mask": mask,
            "input_type_ids": (np.arange(length)[None, :] >= length // 2).astype("int32").repeat(2, 0)}


def pretrainer_inputs(length):
    return {**encoder_inputs(length), "masked_lm_positions": np.array([[1, 2], [1, 3]], "int32")}


CASES = {
    "BertEmbeddings": (lambda **kw: modeling.BertEmbeddings(VOCAB, HIDDEN, 16, 2, dropout_rate=0.0, **kw),
                       lambda n: (ids(n), ids(n) % 2), True),
    "BertSelfAttention": (lambda **kw: modeling.BertSelfAttention(HIDDEN, 2, attention_dropout_rate=0.0, **kw),
                          lambda n: hidden_states(n) + (modeling.attention_mask_adder(np.ones((2, n))),), True),
    "TransformerBlock": (lambda **kw: modeling.TransformerBlock(HIDDEN, 2, 16, dropout_rate=0.0,
                                                                attention_dropout_rate=0.0, **kw),
                         lambda n: hidden_states(n) + (modeling.attention_mask_adder(np.ones((2, n))),), True),
    "MaskedLMHead": (lambda **kw: modeling.MaskedLMHead(VOCAB, HIDDEN, hidden_act="gelu", **kw),
                     lambda n: hidden_states(n) + (np.array([[1, 2], [0, 3]], "int32"),
                                                   RNG.normal(size=(VOCAB, HIDDEN)).astype("float32")), False),
    "NextSentenceHead": (lambda **kw: modeling.NextSentenceHead(HIDDEN, **kw), lambda n: (hidden_states(n)[0][:, 0],),
                         False),
    "BertDropout": (lambda **kw: BertDropout(0.0, **kw), hidden_states, True),
    "BertEncoder": (lambda **kw: modeling.BertEncoder(tiny_config(), **kw), lambda n: (encoder_inputs(n),), True),
    "BertPretrainer": (lambda **kw: modeling.BertPretrainer(tiny_config(), **kw), lambda n: (pretrainer_inputs(n),),
                       False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer(name, tmp_path):
    make_layer, make_inputs, sequence_outputs = CASES[name]
    run_layer_test(make_layer, make_inputs, tmp_path, sequence_outputs)


def test_every_layer_of_modeling_has_a_case():
    layers = set()
    for info in pkgutil.iter_modules(modeling.__path__):
        module = importlib.import_module(f"bert_tf.modeling.{info.name}")
        layers |= {name for name, value in vars(module).items()
                   if inspect.isclass(value) and issubclass(value, keras.layers.Layer)
                   and value.__module__ == module.__name__}
    assert layers == set(CASES)

"""Google's TF1 BERT checkpoint names -> this package's Keras variable paths, kept as data.

The Keras layers are named after the TF1 scopes, so every row maps a name to itself; the table stays explicit so
that a renamed layer breaks conversion loudly (tests/test_convert_tf1.py checks it covers the model exactly).
Rows hold "{i}" for the layer index. TF1 kernels are [in, out], as Keras Dense kernels, so nothing is transposed.
"""

import re

EMBEDDINGS = (
    "bert/embeddings/word_embeddings",
    "bert/embeddings/token_type_embeddings",
    "bert/embeddings/position_embeddings",
    "bert/embeddings/LayerNorm/gamma",
    "bert/embeddings/LayerNorm/beta",
)

LAYER = tuple(
    f"bert/encoder/layer_{{i}}/{scope}/{param}"
    for scope in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense",
                  "intermediate/dense", "output/dense")
    for param in ("kernel", "bias")
) + tuple(
    f"bert/encoder/layer_{{i}}/{scope}/LayerNorm/{param}"
    for scope in ("attention/output", "output")
    for param in ("gamma", "beta")
)

POOLER = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")

HEADS = (
    "cls/predictions/transform/dense/kernel",
    "cls/predictions/transform/dense/bias",
    "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/transform/LayerNorm/beta",
    "cls/predictions/output_bias",  # [V]; the output weights are the word embeddings (tied)
    "cls/seq_relationship/output_weights",  # [2, H], as NextSentenceHead keeps it
    "cls/seq_relationship/output_bias",
)

# (TF1 name, Keras path, transpose)
TABLE = tuple((name, name, False) for name in EMBEDDINGS + LAYER + POOLER + HEADS)

# Training state, not weights: Adam slots of user-trained checkpoints and the step counter.
IGNORED = re.compile(r"(.*/adam_[mv]|global_step)")

"""HF BERT safetensors names -> this package's Keras variable paths, kept as data.

HF `nn.Linear` weights are [out, in]; Keras Dense kernels (and TF1's) are [in, out], so those are transposed.
The NSP weight is [2, H] in both, as TF1's `output_weights`. Rows hold "{i}" for the layer index.
"""

EMBEDDINGS = (
    ("embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings", False),
    ("embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings", False),
    ("embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings", False),
    ("embeddings.LayerNorm.weight", "bert/embeddings/LayerNorm/gamma", False),
    ("embeddings.LayerNorm.bias", "bert/embeddings/LayerNorm/beta", False),
)

_LINEARS = (
    ("attention.self.query", "attention/self/query"),
    ("attention.self.key", "attention/self/key"),
    ("attention.self.value", "attention/self/value"),
    ("attention.output.dense", "attention/output/dense"),
    ("intermediate.dense", "intermediate/dense"),
    ("output.dense", "output/dense"),
)
_LAYER_NORMS = (("attention.output.LayerNorm", "attention/output/LayerNorm"), ("output.LayerNorm", "output/LayerNorm"))

LAYER = tuple(
    row
    for hf, keras in _LINEARS
    for row in ((f"encoder.layer.{{i}}.{hf}.weight", f"bert/encoder/layer_{{i}}/{keras}/kernel", True),
                (f"encoder.layer.{{i}}.{hf}.bias", f"bert/encoder/layer_{{i}}/{keras}/bias", False))
) + tuple(
    row
    for hf, keras in _LAYER_NORMS
    for row in ((f"encoder.layer.{{i}}.{hf}.weight", f"bert/encoder/layer_{{i}}/{keras}/gamma", False),
                (f"encoder.layer.{{i}}.{hf}.bias", f"bert/encoder/layer_{{i}}/{keras}/beta", False))
)

POOLER = (
    ("pooler.dense.weight", "bert/pooler/dense/kernel", True),
    ("pooler.dense.bias", "bert/pooler/dense/bias", False),
)

# Only in BertForPreTraining / BertForMaskedLM files; BertModel files (e.g. sentence encoders) have none.
HEADS = (
    ("cls.predictions.transform.dense.weight", "cls/predictions/transform/dense/kernel", True),
    ("cls.predictions.transform.dense.bias", "cls/predictions/transform/dense/bias", False),
    ("cls.predictions.transform.LayerNorm.weight", "cls/predictions/transform/LayerNorm/gamma", False),
    ("cls.predictions.transform.LayerNorm.bias", "cls/predictions/transform/LayerNorm/beta", False),
    ("cls.predictions.bias", "cls/predictions/output_bias", False),
    ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights", False),
    ("cls.seq_relationship.bias", "cls/seq_relationship/output_bias", False),
)

# (HF name, Keras path, transpose)
TABLE = EMBEDDINGS + LAYER + POOLER + HEADS

# What may be absent: BertModel files lack the heads, BertForMaskedLM files the pooler and the NSP head.
OPTIONAL = tuple(name for name, _, _ in POOLER + HEADS)

# Task models keep the encoder under "bert."; BertModel files have no prefix.
PREFIX = "bert."

# Files of pytorch-pretrained-bert (2018-2019) name LayerNorm parameters as TF1 did.
SUFFIX_ALIASES = ((".LayerNorm.gamma", ".LayerNorm.weight"), (".LayerNorm.beta", ".LayerNorm.bias"))

# The decoder is tied to the word embeddings and its bias to cls.predictions.bias: when a file stores them, they
# must equal what they are tied to (an untied decoder has no place in the original model).
TIED = {
    "cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}

# Buffers, not weights.
IGNORED = ("embeddings.position_ids",)

# HF config.json `hidden_act` -> BertConfig.hidden_act. HF's "gelu" is the exact erf form; "gelu_new" and
# "gelu_pytorch_tanh" are the tanh approximation that the original TF1 code called "gelu".
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu",
               "tanh": "tanh"}

# HF config.json keys that carry over under the same name.
CONFIG_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                 "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
                 "initializer_range", "layer_norm_eps")

# The file beside HF's vocab.txt that holds its tokenizer's settings (`do_lower_case`, `strip_accents`).
TOKENIZER_CONFIG = "tokenizer_config.json"

"""Keras layers and models of BERT, written with `keras.ops` so they run under any Keras backend."""

from bert_tf.modeling.activations import gelu, gelu_tanh, get_activation
from bert_tf.modeling.attention import BertSelfAttention, attention_mask_adder
from bert_tf.modeling.embeddings import BertEmbeddings
from bert_tf.modeling.encoder import BertEncoder
from bert_tf.modeling.losses import pretraining_losses
from bert_tf.modeling.masked_lm_head import MaskedLMHead, gather_positions
from bert_tf.modeling.next_sentence_head import NextSentenceHead
from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.modeling.transformer_block import TransformerBlock

__all__ = [
    "gelu",
    "gelu_tanh",
    "get_activation",
    "BertSelfAttention",
    "attention_mask_adder",
    "BertEmbeddings",
    "BertEncoder",
    "pretraining_losses",
    "MaskedLMHead",
    "gather_positions",
    "NextSentenceHead",
    "BertPretrainer",
    "TransformerBlock",
]

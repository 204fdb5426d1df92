"""Keras layers and models of BERT, written with `keras.ops` so they run under any Keras backend."""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "gelu": "bert_tf.modeling.activations",
    "gelu_tanh": "bert_tf.modeling.activations",
    "get_activation": "bert_tf.modeling.activations",
    "BertSelfAttention": "bert_tf.modeling.attention",
    "attention_mask_adder": "bert_tf.modeling.attention",
    "BertEmbeddings": "bert_tf.modeling.embeddings",
    "BertEncoder": "bert_tf.modeling.encoder",
    "pretraining_losses": "bert_tf.modeling.losses",
    "MaskedLMHead": "bert_tf.modeling.masked_lm_head",
    "gather_positions": "bert_tf.modeling.masked_lm_head",
    "NextSentenceHead": "bert_tf.modeling.next_sentence_head",
    "BertPretrainer": "bert_tf.modeling.pretrainer",
    "TransformerBlock": "bert_tf.modeling.transformer_block",
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

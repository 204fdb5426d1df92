"""`BertPretrainer`: the encoder with the masked-LM (tied) and next-sentence heads of the original."""

import keras

from bert_tf.modeling.config_serialization import BertConfigSerialization, as_config
from bert_tf.modeling.encoder import ENCODER_INPUTS, PACKED_ROW_INPUTS, BertEncoder, check_inputs
from bert_tf.modeling.losses import pretraining_losses
from bert_tf.modeling.masked_lm_head import MaskedLMHead, gather_positions
from bert_tf.modeling.next_sentence_head import NextSentenceHead

PRETRAINER_INPUTS = ENCODER_INPUTS + ("masked_lm_positions",)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(BertConfigSerialization, keras.Model):
    """BERT for pre-training: `BertEncoder` + `MaskedLMHead` tied to the word embeddings + `NextSentenceHead`.

    Inputs: the encoder's three id tensors plus `masked_lm_positions` [B, P]. Outputs: `mlm_logits` [B, P, V]
    (only at the gathered positions) and `nsp_logits` [B, 2]. `compute_losses(outputs, features)` gives the
    original losses and metrics; `fit` works on batches of the TFRecord feature dict (labels inside `x`).
    Packed rows (several instances per row) add the encoder's `input_position_ids` and `input_instance_ids` and
    `next_sentence_positions` [B, K] (each instance's [CLS]); `nsp_logits` is then [B, K, 2], one per instance.

    Args:
        config: a `BertConfig` (or a dict of its fields).
        use_next_sentence: False drops the NSP loss (RoBERTa-style option); the head still exists.

    Example:
    >>> model = BertPretrainer(BertConfig.preset("tiny", vocab_size=100))
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> out = model({"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids * 0,
    ...              "masked_lm_positions": keras.ops.ones((2, 3), "int32")})
    >>> tuple(out["mlm_logits"].shape), tuple(out["nsp_logits"].shape)
    ((2, 3, 100), (2, 2))
    """

    def __init__(self, config, use_next_sentence=True, name="pretrainer", **kwargs):
        super().__init__(name=name, **kwargs)
        self.config = as_config(config)
        self.use_next_sentence = use_next_sentence
        c = self.config
        self.encoder = BertEncoder(c, dtype=self.dtype_policy)
        self.masked_lm = MaskedLMHead(vocab_size=c.vocab_size, hidden_size=c.hidden_size, hidden_act=c.hidden_act,
                                      initializer_range=c.initializer_range, layer_norm_eps=c.layer_norm_eps,
                                      dtype=self.dtype_policy, name="predictions")
        self.next_sentence = NextSentenceHead(hidden_size=c.hidden_size, initializer_range=c.initializer_range,
                                              dtype=self.dtype_policy, name="seq_relationship")
        # Built here, outside this model's own name scope, so the variables read `cls/predictions/...` as in
        # the TF1 checkpoints, next to the encoder's `bert/...`.
        with keras.name_scope("cls"):
            self.masked_lm.build()
            self.next_sentence.build()
        self.built = True

    def build(self, input_shape=None):
        pass

    def call(self, inputs, training=None):
        check_inputs(inputs, PRETRAINER_INPUTS)
        names = ENCODER_INPUTS + tuple(k for k in PACKED_ROW_INPUTS if k in inputs)
        encoded = self.encoder({k: inputs[k] for k in names}, training=training)
        mlm_logits = self.masked_lm(encoded["sequence_output"], inputs["masked_lm_positions"],
                                    self.encoder.word_embeddings)
        pooled = encoded["pooled_output"]
        if "next_sentence_positions" in inputs:  # packed rows: the pooler on each instance's [CLS]
            cls = gather_positions(encoded["sequence_output"], inputs["next_sentence_positions"])
            pooled = self.encoder.pooler(cls)
        return {"mlm_logits": mlm_logits, "nsp_logits": self.next_sentence(pooled)}

    def pretraining_variables(self):
        """The trainable variables the pre-training loss reaches, in `trainable_variables` order: all of them, or
        without the next-sentence loss all but the pooler and the next-sentence head (which get no gradient)."""
        if self.use_next_sentence:
            return list(self.trainable_variables)
        nsp_only = {id(v) for v in self.encoder.pooler.trainable_variables + self.next_sentence.trainable_variables}
        return [v for v in self.trainable_variables if id(v) not in nsp_only]

    def compute_losses(self, outputs, features):
        """The original losses and metrics (see `bert_tf.modeling.losses.pretraining_losses`)."""
        return pretraining_losses(outputs, features, self.use_next_sentence)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        # Lets `fit` train on the TFRecord feature dict alone: the labels travel inside `x`.
        loss = self.compute_losses(y_pred, x)["loss"]
        return loss + sum(self.losses) if self.losses else loss


    def get_config(self):
        return {**super().get_config(), "use_next_sentence": self.use_next_sentence}

"""`EncoderModule`: the root object of the encoder SavedModel, with the TF Hub BERT API: the reusable
`__call__` that `hub.KerasLayer(trainable=True)` and `keras.layers.TFSMLayer` train, the `.mlm` subobject, and
the signatures TF Serving runs."""

import tensorflow as tf

from bert_tf.modeling.encoder import ENCODER_INPUTS
from bert_tf.modeling.pretrainer import PRETRAINER_INPUTS
from bert_tf.serving.input_checks import checked_inputs, id_specs
from bert_tf.serving.reusable_module import ReusableModule
from bert_tf.serving.serving_module import ServingModule, graph_function
from bert_tf.serving.settings_variables import settings_variables

# `default` is the text-embedding API's name for the pooled output (what `hub.KerasLayer(encoder)` users read).
SERVING_OUTPUTS = ("default", "pooled_output", "sequence_output")


def unique(variables):
    """`variables` without repeats, in order (the masked-LM head reads the encoder's word embeddings)."""
    return list({id(v): v for v in variables}.values())


def plain_variables(keras_variables):
    """The tf.Variables behind Keras variables.

    Only these are stored, never the Keras model: saving it would also save a second copy of every Keras
    variable (KerasVariable exports a new tf.Variable), and TensorFlow's session-based loader (TF Serving's) would
    then restore the copies while the graph reads the originals ("Could not find variable ...").
    """
    return unique(v.value for v in keras_variables)


class EncoderModule(ReusableModule, ServingModule):
    """What the encoder SavedModel holds (written by `bert_tf.serving.export_encoder`).

    - `__call__(inputs, training=False)`: dict of `input_word_ids`, `input_mask`, `input_type_ids` -> dict of
      `default` (= `pooled_output`) [batch, H], `pooled_output`, `sequence_output` [batch, seq, H] and
      `encoder_outputs` (one [batch, seq, H] per layer); with `variables`, `trainable_variables`,
      `regularization_losses` (see `ReusableModule`). `serve` / `train` endpoints for `TFSMLayer`.
    - `mlm` (with a masked-LM head): the same convention, inputs plus `masked_lm_positions` -> the encoder's
      outputs plus `mlm_logits` [batch, positions, vocab]; its variables include the head's. As on TF Hub's BERT
      encoders, `hub.load(encoder).mlm(inputs)` and `hub.KerasLayer(encoder.mlm)` work on the plain encoder.
    - signatures `serving_default` (the three ids -> `default`, `pooled_output`, `sequence_output`) and, with
      `mlm_signature`, `mlm` (the three ids and `masked_lm_positions` -> `mlm_logits`); core TensorFlow ops only.
      Signatures take int32 ids; `__call__` and `mlm` take int32 or int64 (cast to int32).
    - `vocab_file` and `bert_config_file` assets, `do_lower_case` (a bool variable), as TF Hub BERT models have,
      and `strip_accents` beside it (bert_tf/serving/settings_variables.py).

    Every entry point checks its inputs first (`checked_inputs`).

    Args:
        encoder: a `BertEncoder`.
        vocab_file: the vocab of the model, saved as an asset.
        config_file: its `bert_config.json`, saved as an asset (so the encoder can be rebuilt natively).
        settings: the vocab's `TokenizerSettings` (lower-casing, accent stripping).
        masked_lm: the pre-trainer's `MaskedLMHead`, for `mlm` (None: no `mlm`).
        mlm_signature: also serve the head as the signature `mlm` (TF Serving's way to call it).

    Example:
    >>> module = EncoderModule(pretrainer.encoder, "vocab.txt", "bert_config.json",
    ...                        TokenizerSettings.for_vocab("vocab.txt"))  # doctest: +SKIP
    >>> tf.saved_model.save(module, "encoder/1", signatures=module.signature_functions())  # doctest: +SKIP
    """

    def __init__(self, encoder, vocab_file, config_file, settings, masked_lm=None, mlm_signature=False):
        config = encoder.config

        def encode(inputs, training):
            outputs = encoder({k: inputs[k] for k in ENCODER_INPUTS}, training=training)
            return {"default": outputs["pooled_output"], "pooled_output": outputs["pooled_output"],
                    "sequence_output": outputs["sequence_output"], "encoder_outputs": outputs["encoder_outputs"]}

        # Traced once per value of `training`; `__call__`, `serve`, `train` and `serving_default` call the traced
        # function instead of tracing the encoder again (which made an export several times slower).
        @graph_function
        def call(inputs, training):
            return encode(checked_inputs({k: inputs[k] for k in ENCODER_INPUTS}, config), training)

        def serving_outputs(inputs, training):
            outputs = call(inputs, training)
            return {name: outputs[name] for name in SERVING_OUTPUTS}

        specs = id_specs()
        super().__init__(call, specs, plain_variables(encoder.variables),
                         plain_variables(encoder.trainable_variables))
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.bert_config_file = tf.saved_model.Asset(config_file)
        self.do_lower_case, self.strip_accents = settings_variables(settings)
        self.serve = graph_function(lambda inputs: serving_outputs(inputs, False), input_signature=[specs])
        self.train = graph_function(lambda inputs: serving_outputs(inputs, True), input_signature=[specs])

        # Signatures take flat named tensors, so these spell their inputs out.
        def serving_default(input_word_ids, input_mask, input_type_ids):
            return serving_outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                    "input_type_ids": input_type_ids}, False)

        self.serving_default = graph_function(serving_default, input_signature=list(specs.values()))
        self.mlm = self.mlm_signature = None
        if masked_lm is not None:
            @graph_function
            def mlm_call(inputs, training):
                inputs = checked_inputs({k: inputs[k] for k in PRETRAINER_INPUTS}, config)
                outputs = encode(inputs, training)
                outputs["mlm_logits"] = masked_lm(outputs["sequence_output"], inputs["masked_lm_positions"],
                                                  encoder.word_embeddings, training=training)
                return outputs

            mlm_specs = id_specs(PRETRAINER_INPUTS)
            self.mlm = ReusableModule(
                mlm_call, mlm_specs, plain_variables(encoder.variables + masked_lm.variables),
                plain_variables(encoder.trainable_variables + masked_lm.trainable_variables), name="mlm")

            def mlm_logits(input_word_ids, input_mask, input_type_ids, masked_lm_positions):
                inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask,
                          "input_type_ids": input_type_ids, "masked_lm_positions": masked_lm_positions}
                return {"mlm_logits": mlm_call(inputs, False)["mlm_logits"]}

            if mlm_signature:
                self.mlm_signature = graph_function(mlm_logits, input_signature=list(mlm_specs.values()))

    def signature_functions(self):
        """`serving_default`, and `mlm` with a masked-LM head."""
        signatures = {"serving_default": self.serving_default}
        if self.mlm_signature is not None:
            signatures["mlm"] = self.mlm_signature
        return signatures

"""`EncoderModule`: the root object of the encoder SavedModel, with the TF Hub BERT API and the TF Hub
"reusable SavedModel" attributes that `hub.KerasLayer(trainable=True)` and `keras.layers.TFSMLayer` train.
"""

import tensorflow as tf

from bert_tf.modeling.encoder import ENCODER_INPUTS
from bert_tf.modeling.pretrainer import PRETRAINER_INPUTS
from bert_tf.serving.input_checks import check_encoder_inputs, check_positions, id_specs

SERVING_OUTPUTS = ("pooled_output", "sequence_output")


def checked(inputs, asserts):
    """`inputs` made to depend on `asserts`, so the checks fail before any model op reads a bad value."""
    with tf.control_dependencies(asserts):
        return {name: tf.identity(value) for name, value in inputs.items()}


class EncoderModule(tf.__internal__.tracking.AutoTrackable):
    """What the encoder SavedModel holds (written by `bert_tf.serving.export_encoder`).

    - `signatures["serving_default"]`: `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, seq]) ->
      `pooled_output` [batch, H], `sequence_output` [batch, seq, H]; core TensorFlow ops only.
    - `signatures["mlm"]` (with a masked-LM head): the three ids and `masked_lm_positions` -> `mlm_logits`.
    - `__call__(inputs, training)`: the reusable function (dict in, dict out, with `encoder_outputs`), traced for
      both values of `training` so dropout runs only when training; `variables`, `trainable_variables` and
      `regularization_losses` next to it (the TF Hub convention), `serve` / `train` endpoints for `TFSMLayer`.
    - `vocab_file` and `bert_config_file` assets, `do_lower_case` (a bool variable), as TF Hub BERT models have.

    The root is an `AutoTrackable` (as in Keras's own `ExportArchive`) because `tf.Module.variables` is a
    read-only property, and the reusable convention needs a plain `variables` attribute.

    Args:
        encoder: a `BertEncoder`.
        vocab_file: the vocab of the model, saved as an asset.
        config_file: its `bert_config.json`, saved as an asset (so the encoder can be rebuilt natively).
        do_lower_case: whether the vocab is uncased.
        masked_lm: the pre-trainer's `MaskedLMHead`, for the `mlm` signature (None: no `mlm`).

    Example:
    >>> module = EncoderModule(pretrainer.encoder, "vocab.txt", "bert_config.json", True)  # doctest: +SKIP
    >>> tf.saved_model.save(module, "encoder/1", signatures=module.signature_functions())  # doctest: +SKIP
    """

    def __init__(self, encoder, vocab_file, config_file, do_lower_case, masked_lm=None):
        config = encoder.config
        # The Keras model is reached only through the closures below, never stored as an attribute: saving it
        # would also save a second copy of every Keras variable (KerasVariable exports a new tf.Variable), and
        # TensorFlow's session-based loader (TF Serving's) would then restore the copies while the graph reads
        # the originals ("Could not find variable ..."). The plain tf.Variables are what the graph captures.
        self.variables = [v.value for v in encoder.variables]
        self.trainable_variables = [v.value for v in encoder.trainable_variables]
        self.regularization_losses = []
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.bert_config_file = tf.saved_model.Asset(config_file)
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")

        def encode(inputs, training):
            inputs = checked({k: inputs[k] for k in ENCODER_INPUTS}, check_encoder_inputs(inputs, config))
            return encoder(inputs, training=training)

        def call(inputs, training=False):
            outputs = encode(inputs, training)
            return {"pooled_output": outputs["pooled_output"], "sequence_output": outputs["sequence_output"],
                    "encoder_outputs": outputs["encoder_outputs"]}

        def serving_outputs(inputs, training):
            outputs = encode(inputs, training)
            return {name: outputs[name] for name in SERVING_OUTPUTS}

        specs = id_specs()
        self.__call__ = tf.function(call)
        for training in (False, True):
            self.__call__.get_concrete_function(specs, training=training)
        self.serve = tf.function(lambda inputs: serving_outputs(inputs, False), input_signature=[specs])
        self.train = tf.function(lambda inputs: serving_outputs(inputs, True), input_signature=[specs])

        # Signatures take flat named tensors, so these spell their inputs out.
        def serving_default(input_word_ids, input_mask, input_type_ids):
            return serving_outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                    "input_type_ids": input_type_ids}, False)

        self.serving_default = tf.function(serving_default, input_signature=list(specs.values()))
        self.mlm = None
        if masked_lm is not None:
            self.mlm_variables = [v.value for v in masked_lm.variables]

            def mlm(input_word_ids, input_mask, input_type_ids, masked_lm_positions):
                inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask,
                          "input_type_ids": input_type_ids, "masked_lm_positions": masked_lm_positions}
                asserts = check_encoder_inputs(inputs, config) + [
                    check_positions(masked_lm_positions, tf.shape(input_word_ids)[1])]
                inputs = checked(inputs, asserts)
                sequence = encoder({k: inputs[k] for k in ENCODER_INPUTS}, training=False)["sequence_output"]
                logits = masked_lm(sequence, inputs["masked_lm_positions"], encoder.word_embeddings)
                return {"mlm_logits": logits}

            self.mlm = tf.function(mlm, input_signature=list(id_specs(PRETRAINER_INPUTS).values()))

    def signature_functions(self):
        """The functions to save as signatures: `serving_default`, and `mlm` with a masked-LM head."""
        signatures = {"serving_default": self.serving_default}
        if self.mlm is not None:
            signatures["mlm"] = self.mlm
        return signatures

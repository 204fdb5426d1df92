"""`BertSpanQA`: extractive question answering, start and end logits over the tokens (the original run_squad.py
model)."""

import keras

from bert_tf.finetuning.task_model import (
    build_encoder,
    encoder_config,
    from_encoder_config,
    output_initializer,
    replica_dropout,
)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSpanQA(keras.Model):
    """Encoder -> sequence output -> dense H->2 -> `start_logits`, `end_logits` [B, T], as the original
    `create_model` of run_squad.py (no dropout on this head there either).

    The input packs [CLS] question [SEP] passage [SEP]. The original loss is the mean of the start and end
    cross-entropies: `compile(loss={"start_logits": xent, "end_logits": xent}, loss_weights={...: 0.5})`.

    Args:
        encoder: a `BertEncoder`, a `BertConfig` for a new one, or a layer returning `sequence_output`.
        initializer_range: stddev of the output layer's truncated-normal initializer.

    Example:
    >>> model = BertSpanQA(bert_tf.load_encoder("model_dir"))  # doctest: +SKIP
    >>> xent = keras.losses.SparseCategoricalCrossentropy(from_logits=True)  # doctest: +SKIP
    >>> model.compile(optimizer="adam", loss={"start_logits": xent, "end_logits": xent},
    ...               loss_weights={"start_logits": 0.5, "end_logits": 0.5})  # doctest: +SKIP
    >>> model.fit(features, {"start_logits": starts, "end_logits": ends})  # doctest: +SKIP
    """

    def __init__(self, encoder, initializer_range=0.02, name="span_qa", **kwargs):
        super().__init__(name=name, **kwargs)
        self.encoder = build_encoder(encoder)
        self.initializer_range = initializer_range
        self.span_logits = keras.layers.Dense(2, kernel_initializer=output_initializer(initializer_range),
                                              name="span_logits")

    def call(self, inputs, training=None):
        with replica_dropout(training):
            sequence = self.encoder(inputs, training=training)["sequence_output"]
        logits = self.span_logits(sequence)
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, **encoder_config(self.encoder),
                "initializer_range": self.initializer_range}

    @classmethod
    def from_config(cls, config):
        return cls(**from_encoder_config(config))

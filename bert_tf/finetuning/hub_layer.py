"""The tf-keras path: the exported encoder as `tensorflow_hub.KerasLayer(trainable=True)`.

tf-keras and tensorflow-hub are the `hub` extra (`pip install 'bert_tf[hub]'`); Keras 3 users take
`SavedModelEncoder` instead.
"""


def hub_encoder_layer(export_dir, trainable=True, name="bert_encoder"):
    """A `hub.KerasLayer` on an encoder SavedModel from `bert-export`, trainable like the TF Hub BERT encoders.

    It calls the SavedModel's reusable `__call__(inputs, training)`: dropout runs only while training, and
    `fit` updates the SavedModel's variables.

    Example:
    >>> import tf_keras
    >>> inputs = {k: tf_keras.Input([None], dtype="int32", name=k) for k in ("input_word_ids", "input_mask",
    ...                                                                       "input_type_ids")}
    >>> pooled = hub_encoder_layer("exported/encoder/1")(inputs)["pooled_output"]  # doctest: +SKIP
    >>> model = tf_keras.Model(inputs, tf_keras.layers.Dense(2)(pooled))  # doctest: +SKIP
    """
    try:
        import tensorflow_hub as hub
    except ImportError as error:
        raise ImportError("hub_encoder_layer needs tensorflow-hub and tf-keras: pip install 'bert_tf[hub]' "
                          "(Keras 3 users: bert_tf.finetuning.SavedModelEncoder).") from error
    return hub.KerasLayer(export_dir, trainable=trainable, name=name)

"""`SavedModelEncoder`: the encoder SavedModel from `bert-export` as a trainable Keras 3 layer."""

import os

import keras

from bert_tf.config import BertConfig


@keras.saving.register_keras_serializable(package="bert_tf")
class SavedModelEncoder(keras.layers.TFSMLayer):
    """`keras.layers.TFSMLayer` on the exported encoder's `serve` (inference) and `train` (dropout on)
    endpoints, whose weights `fit` trains.

    Call it like `BertEncoder`: a dict of `input_word_ids`, `input_mask`, `input_type_ids` -> a dict with
    `pooled_output` and `sequence_output`. `config` is the `BertConfig` exported with it. Works with the
    TensorFlow backend only (TFSMLayer's limit).

    Args:
        filepath: an `encoder/<version>` folder written by `bert-export`.
        trainable: whether `fit` updates the encoder's weights.

    Example:
    >>> encoder = SavedModelEncoder("exported/encoder/1")  # doctest: +SKIP
    >>> model = BertClassifier(encoder, num_classes=2)   # then compile + fit as usual  # doctest: +SKIP
    """

    def __init__(self, filepath, trainable=True, **kwargs):
        kwargs.pop("call_endpoint", None)
        kwargs.pop("call_training_endpoint", None)
        super().__init__(os.fspath(filepath), call_endpoint="serve", call_training_endpoint="train",
                         trainable=trainable, **kwargs)
        self.config = BertConfig.from_json_file(
            os.path.join(os.fspath(filepath), "assets", "bert_config.json"))

    def _add_existing_weight(self, weight):
        # TFSMLayer names its weights after the loaded variables, whose names end in ":0"; optimizers then build
        # slot names such as "..._embeddings:0_momentum", which are not valid scope names and make `fit` fail.
        # The same variable, wrapped under a name without ":".
        variable = keras.Variable(initializer=weight, trainable=weight.trainable, dtype=weight.dtype,
                                  shape=weight.shape, name=weight.name.split(":")[0].replace("/", "_"))
        self._track_variable(variable)

"""How the layers and models save and load their configuration. Models built from one `BertConfig`
(`BertEncoder`, `BertPretrainer`) go through the config's fields, so a `.keras` file or `get_config()` carries the
architecture as the `bert_config.json` does; a layer's constructor arguments are its config, kept in one list
(`KeptArguments`)."""

import keras

from bert_tf.config import BertConfig


def as_config(config):
    """A `BertConfig` from a `BertConfig` or a dict of its fields.

    Example:
    >>> as_config({"vocab_size": 100, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    ...            "intermediate_size": 32}).hidden_size
    16
    """
    return config if isinstance(config, BertConfig) else BertConfig.from_dict(dict(config))


class BertConfigSerialization:
    """The `get_config`/`from_config` pair of a Keras model whose constructor takes `config` (a `BertConfig` or a
    dict of its fields), `name` and `dtype`, and keeps the `BertConfig` as `self.config`.

    A model with more constructor arguments adds them to `get_config`'s dict. Listed before `keras.Model` among
    the bases, so its pair replaces Keras' own (which knows nothing of `config`).

    Example:
    >>> from bert_tf.modeling.encoder import BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100), dtype="mixed_bfloat16")
    >>> again = BertEncoder.from_config(encoder.get_config())
    >>> again.config == encoder.config, again.dtype_policy.name
    (True, 'mixed_bfloat16')
    """

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
                "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        dtype = config.pop("dtype", None)
        if isinstance(dtype, dict):
            dtype = keras.saving.deserialize_keras_object(dtype)
        return cls(dtype=dtype, **config)


class KeptArguments:
    """A layer whose constructor arguments (besides Keras' own) are its config, listed once: `keep_arguments`
    stores each as an attribute of its name, and `get_config` returns them with Keras' own, so `from_config`
    rebuilds the layer. Listed before the Keras base class.

    Example:
    >>> class Scale(KeptArguments, keras.layers.Layer):
    ...     def __init__(self, factor=2.0, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.keep_arguments(factor=factor)
    >>> layer = Scale(3.0, name="scale")
    >>> layer.factor, Scale.from_config(layer.get_config()).factor
    (3.0, 3.0)
    """

    def keep_arguments(self, **arguments):
        self._kept_arguments = tuple(arguments)
        for name, value in arguments.items():
            setattr(self, name, value)

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in self._kept_arguments}}

"""One set of checks for every Keras layer and model of bert_tf/modeling, in the spirit of keras-hub's
`TestCase.run_layer_test`: what a user of a layer relies on when they save, reload, serialize or run it in mixed
precision, or feed it sequences of another length.

`run_layer_test(make_layer, make_inputs, tmp_path)` checks that
- `from_config(get_config())` gives the same config, and a layer built from it (with the same weights) the same
  outputs;
- the layer, saved in a model as a `.keras` file and loaded back, gives the same outputs;
- built with `dtype="mixed_bfloat16"`, its weights stay float32, every Dense inside it computes in bfloat16, and its
  outputs stay within 0.1 of the float32 layer's (LayerNorm and softmax stay float32 by design);
- it runs on inputs of two sequence lengths, and each output with a sequence axis has that length.
"""

import warnings

import keras
import numpy as np
from keras import ops

LENGTHS = (5, 9)


@keras.saving.register_keras_serializable(package="bert_tf_tests")
class LayerModel(keras.Model):
    """A model around one layer, so that the layer can be saved as a `.keras` file: `call(args)` is
    `layer(*args)`."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer

    def call(self, args):
        return self.layer(*args)

    def get_config(self):
        return {**super().get_config(), "layer": keras.saving.serialize_keras_object(self.layer)}

    @classmethod
    def from_config(cls, config):
        return cls(keras.saving.deserialize_keras_object(config.pop("layer")), **config)


def outputs_of(layer, args):
    """The layer's outputs on `args` (a tuple of positional arguments) as a flat list of numpy arrays."""
    outputs = layer(*args) if not isinstance(layer, LayerModel) else layer(args)
    return [ops.convert_to_numpy(ops.cast(x, "float32")) for x in keras.tree.flatten(outputs)]


def assert_same_outputs(got, expected, atol=1e-6):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, atol=atol)


def run_layer_test(make_layer, make_inputs, tmp_path, sequence_outputs=True):
    """All the checks above. `make_layer(**kwargs)` builds the layer (kwargs such as `dtype` go to its
    constructor); `make_inputs(length)` gives the positional arguments of a call at that sequence length;
    `sequence_outputs=False` when no output has a sequence axis."""
    keras.utils.set_random_seed(0)
    layer = make_layer()
    args = make_inputs(LENGTHS[0])
    expected = outputs_of(layer, args)

    # Config round trip, weights copied over.
    config = layer.get_config()
    restored = type(layer).from_config(config)
    assert restored.get_config() == config
    outputs_of(restored, args)  # builds it
    restored.set_weights(layer.get_weights())
    assert_same_outputs(outputs_of(restored, args), expected)

    # .keras file round trip.
    path = str(tmp_path / f"{type(layer).__name__}.keras")
    model = layer if isinstance(layer, keras.Model) else LayerModel(layer)
    with warnings.catch_warnings():
        # The wrapper is never called, so Keras warns it is unbuilt; the layer inside is built and saved.
        warnings.filterwarnings("ignore", "You are saving a model that has not yet been built")
        model.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded) is type(model)
    assert_same_outputs(outputs_of(loaded, args), expected)

    # Mixed precision: float32 weights, bfloat16 matmuls, outputs close to float32.
    keras.utils.set_random_seed(0)
    mixed = make_layer(dtype="mixed_bfloat16")
    outputs_of(mixed, args)
    mixed.set_weights(layer.get_weights())
    assert {v.dtype for v in mixed.weights} <= {"float32"}
    dense = [sub for sub in mixed._flatten_layers() if isinstance(sub, keras.layers.Dense)]
    assert {sub.compute_dtype for sub in dense} <= {"bfloat16"}
    assert_same_outputs(outputs_of(mixed, args), expected, atol=0.1)

    # Variable sequence length.
    for length in LENGTHS:
        outputs = outputs_of(layer, make_inputs(length))
        assert all(np.all(np.isfinite(x)) for x in outputs)
        if sequence_outputs:
            assert any(x.ndim >= 2 and x.shape[1] == length for x in outputs), [x.shape for x in outputs]

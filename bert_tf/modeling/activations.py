"""GELU in both forms, named explicitly, and the lookup from `BertConfig.hidden_act` to a function."""

import math

from keras import ops

from bert_tf.modeling.recomputation import recomputes, tied_to_backward


def keeps_input_only(function, derivative):
    """`function` whose gradient under a 16-bit dtype is `derivative(x)`, recomputed in float32 from `x` in the
    backward pass, so a training step keeps `x` only and not the function's intermediates (for GELU three more
    tensors of `x`'s size: in BERT's FFN, 4H values per token each). The forward pass runs the same ops; float32
    keeps automatic differentiation of them (the original numerics, bit for bit).

    Example:
    >>> square = keeps_input_only(lambda x: x * x, lambda x: 2.0 * x)
    >>> ops.convert_to_numpy(square(ops.ones((2,), "bfloat16"))).tolist()
    [1.0, 1.0]
    """

    @ops.custom_gradient
    def recomputed(x):
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            slope = derivative(ops.cast(tied_to_backward(x, upstream), "float32"))
            return ops.cast(ops.cast(upstream, "float32") * slope, x.dtype)

        return function(x), grad

    def call(x):
        return recomputed(x) if recomputes(x) else function(x)

    return call


def gelu(x):
    """Exact GELU, x * Phi(x) with the erf: what HF and PyTorch call "gelu" (`keeps_input_only` under 16 bits)."""
    return _GELU(x)


def gelu_tanh(x):
    """The tanh approximation of GELU: what the original TF1 BERT code computed under the name "gelu"
    (`keeps_input_only` under 16 bits)."""
    return _GELU_TANH(x)


def _gelu(x):
    return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))


def _gelu_slope(x):
    return 0.5 * (1.0 + ops.erf(x / math.sqrt(2.0))) + x * ops.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * ops.power(x, 3))))


def _gelu_tanh_slope(x):
    c = math.sqrt(2.0 / math.pi)
    t = ops.tanh(c * (x + 0.044715 * x * x * x))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)


_GELU = keeps_input_only(_gelu, _gelu_slope)
_GELU_TANH = keeps_input_only(_gelu_tanh, _gelu_tanh_slope)


def linear(x):
    return x


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "gelu_new": gelu_tanh,
    "relu": ops.relu,
    "tanh": ops.tanh,
    "linear": linear,
}


def get_activation(name):
    """The activation function for a `BertConfig.hidden_act` name."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"Unknown activation {name!r}: use one of {', '.join(_ACTIVATIONS)}.") from None

"""GELU in both forms, named explicitly, and the lookup from `BertConfig.hidden_act` to a function."""

import math

from keras import ops


def gelu(x):
    """Exact GELU, x * Phi(x) with the erf: what HF and PyTorch call "gelu"."""
    return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    """The tanh approximation of GELU: what the original TF1 BERT code computed under the name "gelu"."""
    return 0.5 * x * (1.0 + ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * ops.power(x, 3))))


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

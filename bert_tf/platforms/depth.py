"""The one depth extrapolation: every Transformer block has the same shapes, so each buffer size of a step grows
linearly in the number of blocks, and two compiles of the model cut to a few blocks give the whole model. The XLA:CPU
estimate (`analysis/memory_estimate.py`) and the XLA:GPU/TPU plan (`compiled_plan.py`) both read it from here;
docs/measurements.md checks it against a deeper compile."""


def extrapolate_depth(by_depth, layers):
    """{name: value} at `layers` blocks from {depth: {name: value}} at two (or more: the two shallowest) depths, each
    value on the line through them.

    Example: 1 GiB of temporaries with one block and 1.5 GiB with two make 12.5 GiB with 24.
    >>> extrapolate_depth({1: {"temporary_gib": 1.0}, 2: {"temporary_gib": 1.5}}, 24)
    {'temporary_gib': 12.5}
    """
    if len(by_depth) < 2:
        raise ValueError(f"depths {sorted(by_depth)}: two depths are needed to extrapolate to {layers} blocks")
    (d0, a), (d1, b) = sorted(by_depth.items())[:2]
    return {name: a[name] + (b[name] - a[name]) * (layers - d0) / (d1 - d0) for name in a}

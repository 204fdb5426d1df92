"""The one rule for the largest micro-batch that fits a device, whatever the figures come from (XLA:CPU's
`fixed + per_sequence x micro-batch`, or XLA:GPU's and XLA:TPU's compiled peaks): the largest power of two that
divides the replica's batch (256 sequences in the paper's recipes) whose step's peak stays under
(1 - margin) of the device's memory. Powers of two divide every power-of-two batch, so one micro-batch serves a
replica's share of the global batch on any power-of-two number of replicas; between and beyond the sizes that were
compiled the peak is the line through the nearest two."""

GIB = 2**30
# The replica's batch the platforms file plans for: the paper's global batch on one replica.
PLANNED_BATCH = 256


def fits(peak_bytes, device_bytes, margin):
    """Whether a step's peak stays under (1 - margin) of the device's memory.

    Example:
    >>> fits(12.8 * GIB, 16 * GIB, 0.2), fits(12.9 * GIB, 16 * GIB, 0.2)
    (True, False)
    """
    return peak_bytes <= (1 - margin) * device_bytes


def value_at(points, micro):
    """The value at `micro` from (micro_batch, value) points: a point's own value, else the line through the two
    nearest points (between or beyond them; the weights and slots are fixed and activations grow with the
    micro-batch), or with one point, proportional above a fixed part of zero (an over-estimate, the safe side).

    Example:
    >>> value_at([(8, 2.0), (32, 5.0)], 16), value_at([(8, 2.0), (32, 5.0)], 64), value_at([(8, 2.0)], 16)
    (3.0, 9.0, 4.0)
    """
    points = sorted(set(points))
    for m, b in points:
        if m == micro:
            return b
    if len(points) == 1:
        m, b = points[0]
        return b * micro / m
    below = [p for p in points if p[0] < micro]
    above = [p for p in points if p[0] > micro]
    if below and above:
        (m0, b0), (m1, b1) = below[-1], above[0]
    elif above:
        (m0, b0), (m1, b1) = above[0], above[1]
    else:
        (m0, b0), (m1, b1) = below[-2], below[-1]
    return b0 + (b1 - b0) * (micro - m0) / (m1 - m0)


def largest_fitting_micro_batch(points, device_bytes, margin, batch=PLANNED_BATCH):
    """The largest power of two dividing `batch` whose peak, read from (micro_batch, peak_bytes) `points` by
    `value_at`, `fits` the device; None if not even one sequence fits.

    Example: 8 GiB fixed and 0.5 GiB a sequence on an 80 GiB device at a 0.2 margin: 64 (40 GiB) fits, 128 does not.
    >>> largest_fitting_micro_batch([(32, 24 * GIB), (64, 40 * GIB)], 80 * GIB, 0.2)
    64
    """
    best = None
    micro = 1
    while micro <= batch and batch % micro == 0:
        if fits(value_at(points, micro), device_bytes, margin):
            best = micro
        micro *= 2
    return best

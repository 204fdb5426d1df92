"""The format of an exported training step (`tools/xla/export_xla_step.py` writes it, `tools/xla/run_xla_step.py`
reads it): the file names, the weight pattern both sides regenerate, and the fixed sample of outputs the check
compares. numpy and the standard library only, so the runner imports it where TensorFlow is not installed.

A folder holds:
- `program.hlo.pb.gz`: the step's `HloModuleProto` as `experimental_get_compiler_ir(...)(stage="hlo_serialized")`
  gives it (TensorFlow's unoptimised program), gzipped;
- `inputs.npz`: the entry parameters that cannot be regenerated (the batch, the step counter, dropout seed states,
  the loop's metric accumulator), keyed by parameter index;
- `check.npz` (checked steps only): TensorFlow's own value of each output at `sample_indices`, keyed by output index;
- `manifest.json`: every parameter (index, name, shape, dtype, where its value comes from), every output and the
  parameter it updates, the step's shapes, seeds and model FLOPs.
"""

import numpy as np

PROGRAM_FILE = "program.hlo.pb.gz"
INPUTS_FILE = "inputs.npz"
CHECK_FILE = "check.npz"
MANIFEST_FILE = "manifest.json"
FORMAT_VERSION = 1
SAMPLE_SIZE = 1024  # elements of each output compared with TensorFlow's run


def pattern(shape, seed, center, scale, dtype="float32"):
    """`center + scale * u`, u in [-0.5, 0.5) from an integer hash of (seed, element index): bit-identical on every
    machine and numpy version (integer arithmetic, an exact 24-bit conversion, one rounding), and fast enough for
    BERT-large's 1 G weights and Adam slots, which cannot travel.

    >>> pattern([4], seed=1, center=0.0, scale=1.0).tolist() == pattern([4], 1, 0.0, 1.0).tolist()
    True
    """
    size = int(np.prod(shape, dtype=np.int64))
    h = np.arange(size, dtype=np.uint32)
    h += np.uint32((seed * 0x9E3779B1) & 0xFFFFFFFF)
    h *= np.uint32(0x85EBCA77)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE3D)
    h ^= h >> np.uint32(16)
    u = (h >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24) - np.float32(0.5)
    return (np.float32(center) + np.float32(scale) * u).astype(dtype).reshape(shape)


def sample_indices(size):
    """The flat indices of an output of `size` elements that the check compares: all of a small output, else
    `SAMPLE_SIZE` spread over the whole tensor by a stride coprime to nothing in particular (a large prime)."""
    if size <= SAMPLE_SIZE:
        return np.arange(size, dtype=np.int64)
    return np.unique((np.arange(SAMPLE_SIZE, dtype=np.int64) * 1_000_003 + 7) % size)


def parameter_value(parameter, stored):
    """The value of one entry parameter (a manifest entry): regenerated from its pattern, or read from `stored`
    (the `inputs.npz` mapping)."""
    if parameter["source"] == "pattern":
        p = parameter["pattern"]
        return pattern(parameter["shape"], p["seed"], p["center"], p["scale"], parameter["dtype"])
    return stored[str(parameter["index"])]

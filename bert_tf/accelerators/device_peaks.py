"""The accelerators a run may use: dense peak FLOP rates per compute dtype and memory, per replica device.

Pure Python (no TensorFlow), so the JAX benchmark uses the same table. Dense (no sparsity) peaks, TFLOP/s per replica
device, with their sources:
- TPUs: Google Cloud TPU documentation, "TPU v2/v3/v4/v5e/v5p/v6e" system architecture pages (bf16 peak per chip,
  HBM per chip). TPUStrategy runs one replica per TensorCore on v2/v3 (two cores per chip: half the chip's figures)
  and one per chip on v4/v5e/v5p/v6e (megacore or a single core). The MXU computes float32 matmuls in bfloat16
  passes, so the bf16 figure is also the ceiling of a float32 run.
- NVIDIA GPUs: the A100 (SXM4/PCIe), H100 (SXM5, PCIe, NVL), H200, L4, L40S, A10, V100 and T4 data sheets. float32
  matmuls
  run as TF32 on Ampere and later while TensorFlow's TF32 execution is on (its default), else at the FP32 rate.
"""

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class DeviceSpec:
    """One replica's device: dense peak TFLOP/s per compute dtype and its memory.

    Attributes:
        name: the table's key (e.g. "tpu_v4", "a100").
        bfloat16, float16, tensor_float32, float32: peak TFLOP/s of matmuls in that dtype (None: no such units).
        memory_gib: memory of the device one replica uses (HBM of a chip, or of a core on TPU v2/v3).
    """

    name: str
    bfloat16: float
    float16: float
    tensor_float32: float
    float32: float
    memory_gib: float


def _tpu(name, chip_bf16, chip_hbm_gib, cores_per_replica_device=1):
    per = 1.0 / cores_per_replica_device
    return DeviceSpec(name, chip_bf16 * per, chip_bf16 * per, chip_bf16 * per, chip_bf16 * per, chip_hbm_gib * per)


# Per replica device. The memory of each GPU model name is its smallest variant; the 80 GB parts are named apart.
DEVICES = {spec.name: spec for spec in (
    _tpu("tpu_v2", 45.0, 16.0, cores_per_replica_device=2),
    _tpu("tpu_v3", 123.0, 32.0, cores_per_replica_device=2),
    _tpu("tpu_v4", 275.0, 32.0),
    _tpu("tpu_v5e", 197.0, 16.0),
    _tpu("tpu_v5p", 459.0, 95.0),
    _tpu("tpu_v6e", 918.0, 32.0),
    DeviceSpec("a100_40gb", 312.0, 312.0, 156.0, 19.5, 40.0),
    DeviceSpec("a100_80gb", 312.0, 312.0, 156.0, 19.5, 80.0),
    DeviceSpec("h100_80gb", 989.4, 989.4, 494.7, 66.9, 80.0),    # SXM5
    DeviceSpec("h100_pcie", 756.0, 756.0, 378.0, 51.2, 80.0),
    DeviceSpec("h100_nvl", 835.0, 835.0, 417.5, 60.0, 94.0),
    DeviceSpec("h200", 989.4, 989.4, 494.7, 66.9, 141.0),
    DeviceSpec("l40s", 362.1, 362.1, 183.0, 91.6, 48.0),
    DeviceSpec("l4", 121.0, 121.0, 60.0, 30.3, 24.0),
    DeviceSpec("a10", 125.0, 125.0, 62.5, 31.2, 24.0),
    DeviceSpec("v100", None, 125.0, None, 15.7, 16.0),            # SXM2; bfloat16 has no tensor cores here
    DeviceSpec("t4", None, 65.0, None, 8.1, 16.0),
)}

# TPU accelerator types: "v4-32", "v5litepod-16" (v5e), "v5p-128", "v6e-8", "tpu_v3".
_TPU_TYPE = re.compile(r"^(?:tpu[ _-]?)?v(\d)(litepod|e|p)?(?:-\d+)?$")
_TPU_NAMES = {("2", ""): "tpu_v2", ("3", ""): "tpu_v3", ("4", ""): "tpu_v4", ("5", "litepod"): "tpu_v5e",
              ("5", "e"): "tpu_v5e", ("5", "p"): "tpu_v5p", ("6", "e"): "tpu_v6e"}
# GPU names as TensorFlow reports them ("NVIDIA A100-SXM4-80GB") to table keys: the first row whose words are all
# in the lower-cased name wins, so the more specific rows come first.
_GPU_WORDS = (
    (("a100", "80gb"), "a100_80gb"), (("a100",), "a100_40gb"), (("h100", "pcie"), "h100_pcie"),
    (("h100", "nvl"), "h100_nvl"), (("h100",), "h100_80gb"), (("h200",), "h200"), (("l40s",), "l40s"), (("l4",), "l4"),
    (("a10",), "a10"), (("v100",), "v100"),
    (("t4",), "t4"),
)


def device_spec(kind):
    """The `DeviceSpec` for a device kind: a table key ("tpu_v4", "a100_80gb"), a TPU accelerator type ("v4-32",
    "v5litepod-8") or a GPU name as TensorFlow reports it ("NVIDIA H100 80GB HBM3"); None when unknown.

    Example:
    >>> device_spec("v5litepod-16").bfloat16, device_spec("NVIDIA A100-SXM4-80GB").memory_gib
    (197.0, 80.0)
    """
    key = kind.strip().lower()
    if key in DEVICES:
        return DEVICES[key]
    tpu = _TPU_TYPE.match(key)
    if tpu:
        name = _TPU_NAMES.get((tpu.group(1), tpu.group(2) or ""))
        return DEVICES[name] if name else None
    words = set(re.split(r"[\s_-]+", key))
    return next((DEVICES[name] for needed, name in _GPU_WORDS if all(w in words for w in needed)), None)

"""The MFU's peak: the accelerator's data-sheet figure times the replicas (never the host CPU's), a steady measured
figure on CPUs, and never an MFU above 100%."""

import logging

import pytest
import tensorflow as tf
from absl import logging as absl_logging

from bert_tf.accelerators.device_peaks import DEVICES, device_spec
from bert_tf.accelerators.peak_flops import (
    Peak,
    accelerator_kind,
    clipped_mfu,
    devices_kind,
    measure_peak_flops,
    run_peak,
)
from bert_tf.accelerators.replica_devices import replica_devices
from bert_tf.training.training_log import TrainingLog

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

DEFAULT = tf.distribute.get_strategy()


@pytest.mark.parametrize("kind, name", [
    ("v4-32", "tpu_v4"), ("v5litepod-16", "tpu_v5e"), ("v5p-128", "tpu_v5p"), ("v6e-8", "tpu_v6e"),
    ("v3-8", "tpu_v3"), ("NVIDIA A100-SXM4-80GB", "a100_80gb"), ("NVIDIA A100-PCIE-40GB", "a100_40gb"),
    ("NVIDIA H100 80GB HBM3", "h100_80gb"), ("NVIDIA H100 PCIe", "h100_pcie"), ("NVIDIA L4", "l4"),
    ("NVIDIA L40S", "l40s"), ("Tesla V100-SXM2-16GB", "v100"), ("h100_80gb", "h100_80gb")])
def test_device_kinds_map_to_their_data_sheet(kind, name):
    assert device_spec(kind) is DEVICES[name]


def test_unknown_kinds_have_no_peak():
    assert device_spec("v9-8") is None and device_spec("NVIDIA GeForce GTX 1080") is None
    assert run_peak(DEFAULT, 8, 1, "bfloat16", accelerator="v9-8") is None  # no MFU rather than a wrong one


def test_accelerator_peak_is_the_data_sheet_times_the_replicas():
    peak = run_peak(DEFAULT, 32, 4, "bfloat16", accelerator="v4-64")  # 32 chips on 4 hosts
    assert peak.flops_per_second == pytest.approx(32 * 275e12) and not peak.measured
    assert peak.source == "tpu_v4 data sheet: 275 TFLOP/s bfloat16 x 32 replica(s)"
    # TPU v3 runs a replica per TensorCore: half a chip's 123 TFLOP/s and 32 GiB each.
    assert run_peak(DEFAULT, 8, 1, "bfloat16", accelerator="v3-8").flops_per_second == pytest.approx(8 * 61.5e12)
    assert DEVICES["tpu_v3"].memory_gib == 16


def test_float32_on_ampere_counts_tensor_float32_while_tensorflow_uses_it():
    assert run_peak(DEFAULT, 8, 1, "float32", accelerator="a100_80gb").flops_per_second == pytest.approx(8 * 156e12)
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        assert run_peak(DEFAULT, 8, 1, "float32", accelerator="a100_80gb").flops_per_second == pytest.approx(
            8 * 19.5e12)
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(True)
    with pytest.raises(ValueError, match="v100 has no bfloat16 matrix units"):
        run_peak(DEFAULT, 8, 1, "bfloat16", accelerator="v100")


def test_cpu_peak_is_measured_per_worker_and_stated():
    assert run_peak(DEFAULT, 1, 1, "float32", peak_tflops=2.5) == Peak(2.5e12, "stated: --peak_tflops=2.5")
    peak = run_peak(DEFAULT, 2, 2, "float32")  # 2 replicas on the logical CPUs of 2 workers: 2 x the measure
    assert peak.measured and peak.source.startswith("measured: best of repeated float32 matmuls on this CPU")
    assert peak.source.endswith("x 2 worker(s)")
    assert 1e8 < peak.flops_per_second / 2 < 1e14
    assert 1e8 < measure_peak_flops("bfloat16", size=256, repeats=2, seconds_per_repeat=0.02) < 1e14


def test_mfu_never_exceeds_100_percent_and_says_why(tmp_path, caplog):
    assert clipped_mfu(1e12, Peak(4e12, "x")) == (0.25, None)
    log = TrainingLog(str(tmp_path), is_chief=True, resume_step=0, num_train_steps=100)
    low = Peak(1e9, "measured: best of repeated float32 matmuls on this CPU, 0.001 TFLOP/s x 1 worker(s)", True)
    with caplog.at_level(logging.WARNING):
        row = log.record(10, "seq128", {"loss": 7.0}, steps=10, seconds=1.0, sequences=80, model_flops=5e9,
                         peak=low)
    assert row["mfu"] == 1.0 and row["model_tflops_per_second"] == pytest.approx(5e-3)
    assert "above the peak it is measured against (0.001 TFLOP/s, measured: best of repeated" in caplog.text
    assert "Pass --peak_tflops" in caplog.text
    row = log.record(20, "seq128", {"loss": 6.0}, steps=10, seconds=1.0, sequences=80, model_flops=5e8, peak=low)
    assert row["mfu"] == pytest.approx(0.5)
    # Warned once per run, not at every loop (the demo printed it every 100 steps).
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        row = log.record(30, "seq128", {"loss": 5.0}, steps=10, seconds=1.0, sequences=80, model_flops=5e9,
                         peak=low)
    assert row["mfu"] == 1.0 and "above the peak" not in caplog.text


def test_the_peak_is_looked_up_for_the_replicas_devices(monkeypatch):
    """The kind comes from the replicas' own devices (`strategy.extended.worker_devices`), not from where an unplaced
    tensor lands: on a TPU pod's classic stack that is the client's CPU, which would divide a TPU run by a CPU
    peak."""
    monkeypatch.setenv("TPU_ACCELERATOR_TYPE", "v4-16")
    pod = [f"/job:worker/replica:0/task:{t}/device:TPU:{c}" for t in (0, 1) for c in range(4)]
    assert devices_kind(pod) == "v4-16"
    assert run_peak(DEFAULT, 8, 1, "bfloat16", accelerator=devices_kind(pod)).source.startswith("tpu_v4 data sheet")
    one_device = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert replica_devices(one_device) == ("/job:localhost/replica:0/task:0/device:CPU:0",)
    assert accelerator_kind(one_device) is None and accelerator_kind(DEFAULT) is None  # CPUs: measured


def test_each_log_row_names_where_its_mfu_peak_comes_from(tmp_path, caplog):
    log = TrainingLog(str(tmp_path), is_chief=True, resume_step=0, num_train_steps=100)
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.INFO)  # another test in this process may have raised it
    for peak, kind in ((Peak(4e12, "tpu_v4 data sheet: 275 TFLOP/s bfloat16 x 16 replica(s)"), "tpu_v4 data sheet"),
                       (Peak(4e12, "stated: --peak_tflops=4"), "stated"),
                       (Peak(4e12, "measured: best of repeated float32 matmuls on this CPU", True), "measured")):
        caplog.clear()
        with caplog.at_level(logging.INFO):
            log.record(10, "seq128", {"loss": 7.0}, steps=10, seconds=1.0, sequences=80, model_flops=1e12,
                       peak=peak)
        assert f"MFU 25.0% of the {kind} peak" in caplog.text
    absl_logging.set_verbosity(verbosity)

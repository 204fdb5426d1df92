"""Wrong devices are refused before the first step, with the install command; the CPU fallbacks the tests train on
stay. The command-line rows (exit 2, one line) are in tests/test_bad_inputs.py."""

import logging

import pytest
import tensorflow as tf

from bert_tf.platforms.platforms_file import load_platforms
from bert_tf.training.device_check import (
    WrongDeviceError,
    check_jit_scope,
    check_platform_devices,
    check_run_devices,
    platform_device_type,
)
from bert_tf.training.platforms import apply_platform
from bert_tf.training.recipe import load_recipe
from bert_tf.training.strategy import create_strategy, default_all_reduce_implementation

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def test_every_platform_names_its_device_type():
    types = {name: platform_device_type(p.device) for name, p in load_platforms().items()}
    assert types["tpu_v4"] == "TPU" and types["a100_80gb"] == "GPU" and types["h100_80gb"] == "GPU"
    assert types["cpu"] is None


def test_accelerator_platforms_are_refused_on_cpu_replicas_and_cpu_passes():
    one_device = create_strategy("one_device")
    for platform, words in (("a100_40gb", 'is for GPUs, but the run\'s replicas are on CPU:0'),
                            ("tpu_v5e", "is for TPUs, but the run's replicas are on CPU:0")):
        recipe = apply_platform(load_recipe("bert_base_paper"), platform)
        assert recipe.platform == platform
        with pytest.raises(WrongDeviceError, match=words):
            check_run_devices(recipe, one_device)
    check_platform_devices("cpu", None, one_device)
    check_run_devices(apply_platform(load_recipe("bert_base_paper"), "cpu"), tf.distribute.get_strategy())


def test_gpu_platforms_compile_the_whole_step_and_tpus_keep_the_recipes_setting():
    gpu = apply_platform(load_recipe("bert_large_paper"), "h100_80gb")
    assert (gpu.jit_compile, gpu.jit_compile_scope) == (True, "step")
    tpu = apply_platform(load_recipe("bert_large_paper"), "tpu_v4")
    assert (tpu.jit_compile, tpu.jit_compile_scope) == (False, "gradients")  # TPUStrategy compiles the loop itself


def test_mirrored_on_cpu_stays_with_a_warning_and_step_scope_is_refused_there(caplog):
    with caplog.at_level(logging.WARNING):
        mirrored = create_strategy("mirrored")
    assert "--strategy=mirrored found no GPU: training on the CPU" in caplog.text
    assert 'pip install ".[gpu]"' in caplog.text
    assert mirrored.num_replicas_in_sync == 1
    with pytest.raises(WrongDeviceError, match="jit_compile_scope=step compiles the whole step, which "
                                               "MirroredStrategy can do on GPUs only"):
        check_jit_scope("step", mirrored)
    check_jit_scope("gradients", mirrored)
    check_jit_scope("step", create_strategy("one_device"))  # one device updates without merge_call in XLA


def test_multi_worker_all_reduces_over_nccl_when_there_are_gpus():
    assert default_all_reduce_implementation(8) == "nccl"
    assert default_all_reduce_implementation(0) == "auto"

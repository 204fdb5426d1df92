"""cuDNN flash attention through XLA's custom calls (bert_tf/accelerators/cudnn_flash_attention.py), checked where
no GPU is: the compiled step's program holds the forward and backward calls with the config jax 0.11.2 writes for
the same shapes; the custom gradient, with a reference implementation of the two calls in place of cuDNN, gives
today's gradients; outside XLA, for packed rows and with attention dropout the layer keeps or refuses as it says;
a run that cannot compile the calls is refused with one line."""

import json
import os
import re
import subprocess

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.accelerators import cudnn_fmha_config as fmha
from bert_tf.accelerators.cudnn_flash_attention import CudnnFlashAttention, check_can_run
from bert_tf.errors import InputError
from bert_tf.modeling.attention import MASK_ADDER, BertSelfAttention, attention_mask_adder, sequence_lengths
from bert_tf.modeling.attention_kernel import active_attention_kernel, fused_attention_kernel
from bert_tf.training.pretraining import PretrainingRun
from bert_tf.training.recipe import Recipe, RecipeError, load_recipe
from helpers import REPO, python_path_env, tiny_model_section
from pretraining_records import write_records, write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

B, T, HIDDEN, HEADS = 2, 16, 32, 2  # head size 16: a multiple of 8, as cuDNN needs
LENGTHS = [11, 16]  # one padded row, one full row
JAX_PYTHON = os.path.join(REPO, ".venv-jax", "bin", "python")


def reference_call(target, operands, result_specs, backend_config):
    """What cuDNN's two calls compute, in TensorFlow ops (today's attention's ops, in its order and dtypes): the
    forward gives O (zeros at queries beyond a row's length, as cuDNN's padding mask), the softmax's log-sum-exp
    and a workspace; the backward differentiates the same forward."""
    config = json.loads(backend_config)["cudnn_fmha_backend_config"]
    scale = config["fmha_scale"]

    def forward(q, k, v, lengths):
        keys = tf.range(q.shape[2])[None, :] < lengths[:, None]  # [B, T]
        bias = tf.where(keys, 0.0, MASK_ADDER)[:, None, None, :]
        scores = tf.matmul(q, k, transpose_b=True) * tf.cast(scale, q.dtype)
        logits = tf.cast(scores, tf.float32) + bias
        out = tf.matmul(tf.cast(tf.nn.softmax(logits, axis=-1), q.dtype), v)
        out = out * tf.cast(keys, q.dtype)[:, None, :, None]
        return out, tf.reduce_logsumexp(logits, axis=-1)

    workspace = tf.zeros([0], tf.uint8)
    if target == fmha.FORWARD_TARGET:
        q, k, v, q_lengths, kv_lengths = operands
        assert q_lengths is kv_lengths and config["mask_type"] == "PADDING"
        return (*forward(q, k, v, q_lengths), workspace)
    assert target == fmha.BACKWARD_TARGET
    q, k, v, statistics, d_out, out, lengths, _ = operands
    with tf.GradientTape() as tape:
        tape.watch([q, k, v])
        again, _ = forward(q, k, v, lengths)
    return (*tape.gradient(again, [q, k, v], output_gradients=d_out), workspace)


class EverywhereFlash(CudnnFlashAttention):
    """The kernel with the reference calls, applied outside XLA too (so it runs eagerly on this CPU)."""

    def applies(self, q):
        return True


@pytest.fixture(name="layer")
def layer_fixture():
    keras.utils.set_random_seed(1)
    layer = BertSelfAttention(HIDDEN, HEADS, attention_dropout_rate=0.0, dtype="mixed_bfloat16")
    layer.build((B, T, HIDDEN))
    return layer


def inputs(lengths=LENGTHS):
    x = tf.constant(np.random.default_rng(0).normal(size=(B, T, HIDDEN)), tf.float32)
    mask = tf.cast(tf.range(T)[None, :] < tf.constant(lengths)[:, None], tf.int32)
    return x, mask, attention_mask_adder(mask)


def gradients(layer, x, mask, bias):
    """d(loss)/d(x and every variable) for a loss on the real tokens' outputs only (what BERT's losses read)."""
    weights = tf.constant(np.random.default_rng(1).normal(size=(B, T, HIDDEN)), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        context = tf.cast(layer(x, bias, training=True), tf.float32)
        loss = tf.reduce_sum(context * weights * tf.cast(mask, tf.float32)[:, :, None])
    return [loss] + tape.gradient(loss, [x] + layer.trainable_variables)


def largest_relative_difference(ours, today):
    return max(float(tf.reduce_max(tf.abs(a - b)) / tf.reduce_max(tf.abs(b))) for a, b in zip(ours, today))


def test_the_custom_gradient_with_reference_calls_gives_todays_gradients(layer):
    x, mask, bias = inputs()
    today = gradients(layer, x, mask, bias)
    with fused_attention_kernel(EverywhereFlash(call=reference_call)):
        flash = gradients(layer, x, mask, bias)
    assert len(flash) == len(today) == 8  # the loss, x, and the query, key and value kernels and biases
    # Both compute in bfloat16; only their backward passes round in different orders.
    assert largest_relative_difference(flash, today) < 2e-2
    # The negative control: lengths one token short give other gradients (the lengths really reach the calls).
    with fused_attention_kernel(EverywhereFlash(call=reference_call)):
        short = gradients(layer, x, mask, attention_mask_adder(tf.cast(tf.range(T)[None, :] < tf.constant(
            [n - 1 for n in LENGTHS])[:, None], tf.int32)))
    assert largest_relative_difference(short, today) > 0.1


def test_outside_xla_for_packed_rows_and_unknown_sizes_the_layer_keeps_todays_attention(layer):
    x, _, bias = inputs()
    today = layer(x, bias, training=True)
    with fused_attention_kernel(CudnnFlashAttention()):
        assert layer(x, bias, training=True).numpy().tobytes() == today.numpy().tobytes()  # eager: not in XLA
        packed = attention_mask_adder(tf.ones([B, T], tf.int32), instance_ids=tf.constant([[0] * 8 + [1] * 8] * B))

        @tf.function(jit_compile=True)
        def packed_call(x):
            return layer(x, packed, training=True)

        hlo = packed_call.experimental_get_compiler_ir(x)(stage="hlo")

        @tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None, T, HIDDEN])])
        def any_batch(x):  # an unknown batch size: cuDNN's config needs every size
            return layer(x, attention_mask_adder(tf.ones(tf.shape(x)[:2], tf.int32)), training=True)

        ops = {op.type for op in any_batch.get_concrete_function().graph.get_operations()}
    assert "custom-call(" not in hlo and " dot(" in hlo
    assert "XlaCustomCallV2" not in ops and "BatchMatMulV2" in ops
    assert active_attention_kernel() is None  # the block is left


def test_attention_dropout_with_the_kernel_is_refused_not_dropped_silently():
    layer = BertSelfAttention(HIDDEN, HEADS, attention_dropout_rate=0.1, dtype="mixed_bfloat16")
    x, _, bias = inputs()
    with fused_attention_kernel(EverywhereFlash(call=reference_call)):
        with pytest.raises(ValueError, match=r"attention_dropout_rate=0.1: set model.attention_probs_dropout_prob"):
            layer(x, bias, training=True)
        assert layer(x, bias, training=False).shape == (B, T, HIDDEN)  # inference has no dropout to lose


def custom_calls(hlo):
    """[(target, operand shapes, result shapes, backend config)] of the custom calls in an HLO module's text."""
    calls = []
    for line in hlo.splitlines():
        match = re.search(r"= (\(.*?\)|\S+) custom-call\((.*?)\), custom_call_target=\"([^\"]+)\"", line)
        if match:
            results, operands, target = match.groups()
            config = json.loads(line.split("backend_config=", 1)[1])
            calls.append((target, re.findall(r"[a-z0-9]+\[[0-9,]*\]", operands),
                          re.findall(r"[a-z0-9]+\[[0-9,]*\]", results), config))
    return calls


def test_the_compiled_training_step_holds_both_calls_with_jaxs_config(layer):
    x, mask, bias = inputs()

    @tf.function(jit_compile=True)
    def step(x):
        return gradients(layer, x, mask, bias)

    with fused_attention_kernel(CudnnFlashAttention()):
        hlo = step.experimental_get_compiler_ir(x)(stage="hlo")
    calls = custom_calls(hlo)
    assert [c[0] for c in calls] == [fmha.FORWARD_TARGET, fmha.BACKWARD_TARGET]
    q = f"bf16[{B},{HEADS},{T},{HIDDEN // HEADS}]"
    (_, forward_in, forward_out, forward_config), (_, backward_in, backward_out, backward_config) = calls
    assert forward_in == [q, q, q, f"s32[{B}]", f"s32[{B}]"]
    assert forward_out == [q, f"f32[{B},{HEADS},{T}]", "u8[0]"]
    assert backward_in == [q, q, q, f"f32[{B},{HEADS},{T}]", q, q, f"s32[{B}]", f"s32[{B}]"]
    assert backward_out == [q, q, q, "u8[0]"]
    scale = 1.0 / np.sqrt(HIDDEN // HEADS)
    assert forward_config == fmha.backend_config(B, HEADS, T, "bfloat16", scale, backward=False)
    assert backward_config == fmha.backend_config(B, HEADS, T, "bfloat16", scale, backward=True)
    # The attention's own products are gone: no dot makes a [B, A, T, T] score tensor any more.
    assert not re.search(rf"= bf16\[{B},{HEADS},{T},{T}\]\{{[0-9,]*\}} dot\(", hlo)
    assert sequence_lengths(bias).numpy().tolist() == LENGTHS


def test_a_run_that_cannot_compile_the_calls_is_refused_with_one_line():
    gpu = {"/physical_device:GPU:0": (9, 0)}
    check_can_run(True, "mixed_bfloat16", 0.0, gpu)  # an H100: runs
    refusals = [((False, "mixed_bfloat16", 0.0, gpu), "needs the step compiled by XLA: set jit_compile: true"),
                ((True, "float32", 0.0, gpu), "not mixed_precision=float32: set mixed_precision: mixed_bfloat16"),
                ((True, "mixed_bfloat16", 0.1, gpu), "attention_probs_dropout_prob=0.1: set"),
                ((True, "mixed_bfloat16", 0.0, {}), "NVIDIA GPUs only and this machine has none"),
                ((True, "mixed_bfloat16", 0.0, {"/physical_device:GPU:0": (7, 0)}), "has 7.0"),
                ((True, "mixed_bfloat16", 0.0, None), "NVIDIA GPUs only")]  # this machine: no GPU
    for arguments, message in refusals:
        with pytest.raises(InputError, match=re.escape(message)) as error:
            check_can_run(*arguments)
        assert "\n" not in str(error.value) and str(error.value).endswith("or set model.attention: einsum.")


JAX_CONFIG = """
import json, sys
from jax._src.cudnn import fused_attention_stablehlo as fa
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from bert_tf.accelerators import cudnn_fmha_config as fmha
with mlir.make_ir_context():
    for backward in (False, True):
        theirs = json.loads(fa.create_dot_product_attention_backend_config(
            256, 16, 512, 512, ir.BF16Type.get(), 0.125, 42, 0.0, fa.MaskType.PADDING,
            fa.AttentionLayout.BNTH.value, None, 1, False, is_bwd=backward))
        ours = fmha.backend_config(256, 16, 512, "bfloat16", 0.125, backward=backward)
        print("backward" if backward else "forward", "same" if ours == theirs else f"differs: {ours} {theirs}")
"""


@pytest.mark.large
def test_the_config_is_the_one_jax_writes_for_the_same_shapes():
    if not os.path.exists(JAX_PYTHON):
        pytest.fail(f"{JAX_PYTHON} is missing: run `make jax-venv` (jax 0.11.2 on Python 3.12, as on the GPU machine).")
    done = subprocess.run([JAX_PYTHON, "-c", JAX_CONFIG], env=python_path_env(REPO), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == ["forward same", "backward same"], done.stdout[-3000:]


def test_the_recipe_names_the_setting_and_its_departure_from_the_original():
    recipe = load_recipe("bert_large_paper")
    assert recipe.model.attention == "einsum" and "attention" not in recipe.model.to_dict()  # the default
    with pytest.raises(RecipeError, match=r"model.attention='cudnn_flash' has no attention-probability dropout: "
                                          r"set model.attention_probs_dropout_prob: 0.0 beside it"):
        recipe.override({"model.attention": "cudnn_flash"})
    with pytest.raises(RecipeError, match=r"model.attention='flash' must be one of einsum, cudnn_flash"):
        recipe.override({"model.attention": "flash"})
    flash = recipe.override({"model.attention": "cudnn_flash", "model.attention_probs_dropout_prob": 0.0})
    assert flash.model.to_dict()["attention"] == "cudnn_flash"
    assert Recipe.from_dict(flash.to_dict()).model.attention == "cudnn_flash"  # written and read back


def test_a_run_with_cudnn_flash_on_this_cpu_stops_before_its_first_step(tmp_path):
    recipe = Recipe.from_dict({
        "name": "flash_on_cpu",
        "model": tiny_model_section(max_position_embeddings=16, attention="cudnn_flash",
                                    attention_probs_dropout_prob=0.0),
        "vocab_file": write_vocab(tmp_path / "vocab.txt"), "train_batch_size": 4, "num_train_steps": 2,
        "num_warmup_steps": 1, "mixed_precision": "mixed_bfloat16", "jit_compile": True, "jit_compile_scope": "step",
        "phases": [{"name": "seq16", "num_steps": 2, "max_seq_length": 16, "max_predictions_per_seq": 4,
                    "input_file": write_records(tmp_path / "train.tfrecord", 8, 16, 4)}]})
    run = PretrainingRun(recipe, str(tmp_path / "run"), peak_tflops=1.0)
    with pytest.raises(InputError, match=r"^model.attention: cudnn_flash runs on NVIDIA GPUs only and this machine "
                                         r"has none \(CPU or TPU\): or set model.attention: einsum.$"):
        run.prepare()
    assert run.parts is None and not os.path.exists(tmp_path / "run" / "checkpoints")

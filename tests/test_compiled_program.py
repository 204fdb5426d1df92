"""What an accelerator run relies on, checked on the lowered program (HLO) of the multi-step training loop under
mixed_bfloat16, without running it, for the tiny model and (large tier) at the real BERT-base and BERT-large
shapes: no host transfers, no dynamic shapes, every matrix multiplication in bfloat16, and exactly the FLOPs the
MFU counts (accelerators/flops.py). These are lowered under OneDeviceStrategy, whose update takes TPUStrategy's
branch (`merge_call`, see `Trainer._apply_if`); the other tiny loops lower the default strategy's plain `tf.cond`."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.accelerators.flops import training_flops_per_sequence
from bert_tf.analysis.compiled_program import ProgramSummary, lower_training_loop, memory_report
from bert_tf.analysis.memory_estimate import estimate_step_memory
from bert_tf.config import BertConfig
from bert_tf.modeling import BertSelfAttention, attention_mask_adder
from bert_tf.training.pretraining import resolve_bert_config
from bert_tf.training.recipe import Recipe, load_recipe
from helpers import tiny_model_section

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

BATCH = 32  # sequences on one replica, at the first phase's 128 tokens and 20 predictions


def lowered_summary(recipe, micro_batch_size=BATCH):
    """The summary of the recipe's loop, lowered on TPUStrategy's update branch."""
    loop = lower_training_loop(recipe, micro_batch_size=micro_batch_size, steps=2,
                               strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))
    assert loop.update_branch == "merge_call"
    return ProgramSummary.from_hlo_module(loop.compiler_ir("hlo_serialized"))


def paper_recipe(name):
    return load_recipe(name).override({"mixed_precision": "mixed_bfloat16"})


def assert_accelerator_ready(recipe, summary):
    assert summary.host_transfers == []
    assert summary.dynamic_shapes == []
    assert set(summary.dot_flops_by_dtype()) == {("bf16", "bf16")}
    phase = recipe.phases[0]
    expected = BATCH * training_flops_per_sequence(resolve_bert_config(recipe), phase.max_seq_length,
                                                   phase.max_predictions_per_seq)
    np.testing.assert_allclose(summary.dot_flops, expected, rtol=0.01)
    return expected


def test_tiny_loop_on_the_tpu_update_branch_is_one_bfloat16_program_with_the_counted_flops():
    """The checks of the paper models below on the tiny model: the structure is the same at every size."""
    recipe = tiny_recipe(mixed_precision="mixed_bfloat16")
    assert_accelerator_ready(recipe, lowered_summary(recipe))


@pytest.mark.large
def test_bert_base_loop_is_one_bfloat16_program_with_the_counted_flops():
    recipe = paper_recipe("bert_base_paper")
    expected = assert_accelerator_ready(recipe, lowered_summary(recipe))
    assert round(expected / 1e12, 3) == 2.238  # TFLOP per step of 32 x 128 tokens


@pytest.mark.large
def test_bert_large_loop_is_one_bfloat16_program_with_the_counted_flops():
    recipe = paper_recipe("bert_large_paper")
    assert_accelerator_ready(recipe, lowered_summary(recipe))


def tiny_recipe(**overrides):
    return Recipe.from_dict({
        "name": "tiny_program", "train_batch_size": 8, "num_train_steps": 10, "num_warmup_steps": 1,
        "model": tiny_model_section(max_position_embeddings=16),
        "phases": [{"name": "seq16", "num_steps": 10, "max_seq_length": 16, "max_predictions_per_seq": 4}],
        **overrides})


def test_the_checks_see_float32_matmuls_dynamic_shapes_and_flops():
    """The summary is not blind: a float32 loop shows float32 dots (with the same FLOPs), a boolean mask a dynamic
    shape, a known matmul its FLOPs."""
    recipe = tiny_recipe(mixed_precision="float32")
    loop = lower_training_loop(recipe, micro_batch_size=8)
    assert loop.update_branch == "cond"
    summary = ProgramSummary.from_hlo_module(loop.compiler_ir("hlo_serialized"))
    assert set(summary.dot_flops_by_dtype()) == {("f32", "f32")}
    np.testing.assert_allclose(summary.dot_flops, 8 * training_flops_per_sequence(resolve_bert_config(recipe), 16, 4),
                               rtol=0.01)
    masked = tf.function(lambda x: tf.reduce_sum(tf.boolean_mask(x, x > 0)), jit_compile=True)
    assert ProgramSummary.from_hlo_module(masked.experimental_get_compiler_ir(tf.ones([8]))(
        "hlo_serialized")).dynamic_shapes
    matmul = tf.function(lambda a, b: tf.matmul(a, b), jit_compile=True)
    assert ProgramSummary.from_hlo_module(matmul.experimental_get_compiler_ir(tf.ones([3, 5]), tf.ones([5, 7]))(
        "hlo_serialized")).dot_flops == 2 * 3 * 5 * 7


def test_memory_report_holds_the_weights_and_both_adam_slots():
    """XLA's buffer assignment of the compiled step: the arguments are the weights and the two Adam slots (3 x 4
    bytes per parameter) plus the batch; activations are temporaries."""
    recipe = tiny_recipe(mixed_precision="mixed_bfloat16")
    loop = lower_training_loop(recipe, micro_batch_size=2, accumulation_steps=2, steps=1)
    report = memory_report(loop.compiler_ir("optimized_hlo_proto_serialized"))
    parameters = sum(int(np.prod(v.shape)) for v in loop.trainer.model.trainable_variables)
    assert 12 * parameters <= report.arguments < 12 * parameters + 4096
    assert report.temporaries > 0


def test_packed_rows_lower_with_their_inputs_and_a_bias_per_row():
    """With row_packing the lowered step reads the packed rows' inputs (positions, instances, one next-sentence slot
    per instance) and builds a [rows, 1, T, T] attention bias, so the memory estimate covers packed rows too."""
    recipe = tiny_recipe(mixed_precision="mixed_bfloat16").override({"row_packing.enabled": True})
    loop = lower_training_loop(recipe, micro_batch_size=2, steps=1)
    assert {"input_position_ids", "input_instance_ids", "next_sentence_positions",
            "next_sentence_weights"} <= set(loop.batches)
    assert loop.batches["next_sentence_labels"].shape[-1] == recipe.row_packing.max_instances_per_row
    summary = ProgramSummary.from_hlo_module(loop.compiler_ir("hlo_serialized"))
    assert summary.host_transfers == [] and summary.dynamic_shapes == []
    assert "[2,1,16,16]" in loop.compiler_ir("hlo").replace(" ", "")  # the block-diagonal bias of 2 rows of 16


@pytest.mark.large
def test_memory_estimate_from_shallow_models_matches_the_whole_model():
    """The recipes' estimates compile 1- and 2-block models and extrapolate in depth: on a 4-block model that
    agrees with compiling the whole model, and memory grows with the micro-batch."""
    recipe = tiny_recipe(mixed_precision="mixed_bfloat16",
                         model=tiny_model_section(max_position_embeddings=16, num_hidden_layers=4))
    extrapolated = estimate_step_memory(recipe, micro_batch_sizes=(2, 4), depths=(1, 2))
    whole = estimate_step_memory(recipe, micro_batch_sizes=(2, 4), depths=None)
    assert whole.per_sequence_bytes > 0
    for micro in (2, 4, 8):
        assert extrapolated.bytes_for(micro) == pytest.approx(whole.bytes_for(micro), rel=0.1)


def attention_step_bytes(config, num_layers, batch_size, seq_length):
    """Bytes XLA's CPU compiler assigns to forward and backward of `num_layers` residual attention layers of
    `config` under mixed_bfloat16, in training (attention dropout on)."""
    keras.utils.set_random_seed(0)
    layers = [BertSelfAttention(config.hidden_size, config.num_attention_heads,
                                config.attention_probs_dropout_prob, dtype="mixed_bfloat16")
              for _ in range(num_layers)]
    for layer in layers:
        layer.build((None, None, config.hidden_size))
    weights = [w.value for layer in layers for w in layer.trainable_variables]
    bias = attention_mask_adder(tf.ones([batch_size, seq_length]))

    @tf.function(jit_compile=True)
    def gradients(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            for layer in layers:
                x = x + layer(x, bias, training=True)
            loss = tf.reduce_sum(tf.cast(x, tf.float32))
        return tape.gradient(loss, weights)

    x = tf.zeros([batch_size, seq_length, config.hidden_size], tf.bfloat16)
    return memory_report(gradients.experimental_get_compiler_ir(x)(stage="optimized_hlo_proto_serialized")).total


def test_bfloat16_attention_keeps_its_scores_only_per_layer_and_sequence():
    """BERT-base at 512 tokens: what one more attention layer costs per sequence (1 and 2 layers, 1 and 2
    sequences) stays under 2 bytes per [heads, T, T] element (the bfloat16 scores, the one tensor of that size the
    backward pass keeps) plus 32 bytes per [T, H] element (q, k, v, the inputs: the CPU compiler keeps some as
    float32). Before this attention kept the float32 probabilities, the dropout mask and the dropped probabilities:
    40.5 MiB."""
    config, seq = BertConfig.preset("base"), 512
    steps = {(layers, batch): attention_step_bytes(config, layers, batch, seq) for layers in (1, 2) for batch in (1, 2)}
    per_layer_per_sequence = steps[2, 2] - steps[1, 2] - steps[2, 1] + steps[1, 1]
    bound = 2 * config.num_attention_heads * seq ** 2 + 32 * seq * config.hidden_size
    assert per_layer_per_sequence <= bound, (per_layer_per_sequence / 2 ** 20, bound / 2 ** 20)
    assert round(bound / 2 ** 20) == 18  # MiB; measured 16.5 MiB

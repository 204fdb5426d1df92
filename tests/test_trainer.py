"""The training step and loop: gradient accumulation, the XLA-compiled multi-step loop, and the options."""

import contextlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.compat import tensorflow_internals
from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay
from bert_tf.optimizers.lamb import Lamb
from bert_tf.optimizers.optimization import create_optimizer
from bert_tf.training.pretraining import create_pretrainer
from bert_tf.training.recipe import load_recipe
from bert_tf.training.strategy import worker_layout
from bert_tf.training.trainer import Trainer, replica_updated_counters, update_branch
from helpers import tiny_config
from pretraining_records import VOCAB_SIZE, feature_batches

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

SEQ, PRED = 16, 4
CONFIG = tiny_config(vocab_size=VOCAB_SIZE, max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)


def make_trainer(max_micro_batch_size=None, jit_compile=False, mixed_precision="float32", optimizer="adamw",
                 use_next_sentence=True, config=CONFIG, strategy=None):
    strategy = strategy or tf.distribute.get_strategy()
    recipe = load_recipe("demo_cpu").override({"num_train_steps": 20, "num_warmup_steps": 2, "learning_rate": 5e-3,
                                               "optimizer.name": optimizer, "mixed_precision": mixed_precision})
    keras.utils.set_random_seed(7)
    with strategy.scope():  # as run_pretraining builds them
        model = create_pretrainer(config, mixed_precision, use_next_sentence)
        with replica_updated_counters() if jit_compile == "step" else contextlib.nullcontext():
            optimizer = create_optimizer(recipe)
    return Trainer(strategy, worker_layout(strategy), model, optimizer, max_micro_batch_size=max_micro_batch_size,
                   jit_compile=jit_compile)


def stacked(batches):
    return {k: tf.constant(np.stack([b[k] for b in batches])) for k in batches[0]}


def run(trainer, batches):
    """Runs len(batches) steps through the real loop function (a dataset iterator) and returns the weights."""
    iterator = iter(tf.data.Dataset.from_tensor_slices(stacked(batches)))
    result = trainer.train(iterator, len(batches))
    assert result.steps == len(batches) and result.bad_step is None
    return [v.numpy() for v in trainer.model.trainable_variables], result.means


def loop_ops(trainer, batches):
    """The ops of the training loop function as traced for these batches: its graph and every function it calls
    (the while body, the per-replica step, an XLA-compiled gradient function)."""
    iterator = iter(tf.data.Dataset.from_tensor_slices(stacked(batches)))
    graph_def = trainer.train_loop.get_concrete_function(iterator, tf.constant(len(batches))).graph.as_graph_def()
    return list(graph_def.node) + [node for f in graph_def.library.function for node in f.node_def]


def xla_compiled_calls(ops):
    """Calls that TensorFlow must compile with XLA as one cluster (a tf.function with jit_compile=True)."""
    return [op.name for op in ops if "_XlaMustCompile" in op.attr and op.attr["_XlaMustCompile"].b]


def op_dtypes(ops, *types):
    """The dtypes (attr T) of the ops of the given types."""
    return [tf.dtypes.as_dtype(op.attr["T"].type).name for op in ops if op.op in types]


def test_accumulated_micro_batches_equal_one_large_batch():
    batches = feature_batches(3, 8, SEQ, PRED, seed=1)
    whole = make_trainer()
    assert whole.micro_batching(8) == (8, 1)
    accumulated = make_trainer(max_micro_batch_size=2)
    assert accumulated.micro_batching(8) == (2, 4)
    weights_whole, metrics_whole = run(whole, batches)
    weights_accumulated, metrics_accumulated = run(accumulated, batches)
    for a, b in zip(weights_whole, weights_accumulated):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for name in metrics_whole:
        np.testing.assert_allclose(metrics_accumulated[name], metrics_whole[name], rtol=1e-5, err_msg=name)
    # The step moved the weights (the comparison is not of two untouched models).
    assert max(np.abs(a - b).max() for a, b in zip(weights_whole, [v.numpy() for v in make_trainer()
                                                                    .model.trainable_variables])) > 1e-3
    with pytest.raises(ValueError, match=r"per-replica batch of 8 sequences does not split into micro-batches of "
                                         r"max_micro_batch_size=3"):
        make_trainer(max_micro_batch_size=3).micro_batching(8)


def test_whole_multi_step_loop_compiles_with_xla():
    """The loop function (tf.range over steps, per-replica split, forward, backward, accumulation, all-reduce,
    clipping, optimizer update, metric reduction) compiled as ONE XLA program at fixed shapes, as TPUStrategy
    compiles it; only the host's dataset iterator is left out (the batches come in as one tensor)."""
    batches = feature_batches(3, 8, SEQ, PRED, seed=2)
    reference_weights, reference_metrics = run(make_trainer(max_micro_batch_size=4), batches)
    trainer = make_trainer(max_micro_batch_size=4)
    data = stacked(batches)
    loop = tf.function(lambda d: trainer.run_steps(lambda i: ({k: v[i] for k, v in d.items()},), 3), jit_compile=True)
    hlo = loop.experimental_get_compiler_ir(data)(stage="hlo")  # raises if any op cannot be compiled
    assert "while" in hlo
    steps, totals = loop(data)
    result = trainer.loop_result(0, int(steps), totals.numpy())
    assert result.steps == 3 and result.bad_step is None
    for a, b in zip(reference_weights, trainer.model.trainable_variables):
        np.testing.assert_allclose(b.numpy(), a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(result.means["loss"], reference_metrics["loss"], rtol=1e-5)


def test_jit_compile_option_gives_the_same_steps():
    batches = feature_batches(2, 8, SEQ, PRED, seed=3)
    plain_trainer, compiled_trainer = make_trainer(), make_trainer(jit_compile=True)
    plain, _ = run(plain_trainer, batches)
    compiled, _ = run(compiled_trainer, batches)
    for a, b in zip(plain, compiled):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    # The option is not ignored: the loop calls each replica's forward and backward pass as one XLA cluster
    # (an ignored option would give the plain loop, with no such call).
    assert len(xla_compiled_calls(loop_ops(compiled_trainer, batches))) == 1
    assert xla_compiled_calls(loop_ops(plain_trainer, batches)) == []
    # The whole step compiled (the GPU platforms' scope), here on OneDeviceStrategy's merge_call branch: the same
    # steps, and the optimizer's update inside the one XLA cluster.
    step_trainer = make_trainer(jit_compile="step", strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))
    whole_step, _ = run(step_trainer, batches)
    for a, b in zip(plain, whole_step):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    step_ops = loop_ops(step_trainer, batches)
    assert len(xla_compiled_calls(step_ops)) == 1


def test_each_strategy_takes_its_update_branch():
    """Which branch `Trainer._apply_if` takes, as traced in a replica of each strategy: a plain cond where the
    strategy updates without merge_call (the default strategy; MirroredStrategy inside XLA on GPUs, here through
    TensorFlow's test device for that path), the merge_call branch elsewhere. TPUStrategy takes merge_call too:
    its extended class keeps the base class's answer (tests/test_compat.py pins that)."""
    seen = {}

    def trace(name, strategy):
        tf.function(lambda: strategy.run(lambda: seen.setdefault(name, update_branch())))()

    trace("default", tf.distribute.get_strategy())
    trace("one_device", tf.distribute.OneDeviceStrategy("/cpu:0"))
    trace("mirrored", tf.distribute.MirroredStrategy(["/cpu:0"]))
    trace("mirrored_gpu_xla", tensorflow_internals.use_no_merge_call(tf.distribute.MirroredStrategy(["/cpu:0"])))
    assert seen == {"default": "cond", "one_device": "merge_call", "mirrored": "merge_call",
                    "mirrored_gpu_xla": "cond"}


@pytest.mark.parametrize("options", [
    {"optimizer": "lamb"}, {"mixed_precision": "mixed_bfloat16"}, {"mixed_precision": "mixed_float16"},
    {"use_next_sentence": False}])
def test_options_train(options):
    batches = feature_batches(6, 8, SEQ, PRED, seed=4)
    trainer = make_trainer(**options)
    before = {v.path: v.numpy() for v in trainer.model.trainable_variables}
    _, first = run(trainer, batches[:1] * 3)
    weights, later = run(trainer, batches[:1] * 3)
    assert np.isfinite(later["loss"]) and later["loss"] < first["loss"]  # the same batch, learned
    changed = {v.path for v in trainer.model.trainable_variables if not np.array_equal(v.numpy(), before[v.path])}
    if options.get("use_next_sentence") is False:
        assert "next_sentence_loss" not in later
        assert not any(p.startswith(("bert/pooler", "cls/seq_relationship")) for p in changed)
        assert len(changed) == len(before) - 4
    else:
        assert len(changed) == len(before)
    if options.get("mixed_precision") == "mixed_float16":
        assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
        assert int(trainer.optimizer.iterations.numpy()) == 6  # no step skipped for overflow at this scale
    else:
        assert not isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
    # --optimizer picks the update rule: LAMB, or the original AdamWeightDecay (LAMB is not a subclass of it).
    optimizer = getattr(trainer.optimizer, "inner_optimizer", trainer.optimizer)
    assert type(optimizer) is (Lamb if options.get("optimizer") == "lamb" else AdamWeightDecay)

    # Mixed precision: every layer down to the attention's query/key/value computes in 16 bits with float32
    # variables; LayerNorm and the attention softmax stay in float32, in the loop that trains.
    compute = {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}.get(options.get("mixed_precision"), "float32")
    layers = list(trainer.model._flatten_layers())
    norms = [layer for layer in layers if isinstance(layer, keras.layers.LayerNormalization)]
    assert len(norms) == 2 * CONFIG.num_hidden_layers + 2  # two per block, the embeddings', the MLM head's
    assert {n.compute_dtype for n in norms} == {"float32"}
    assert {layer.compute_dtype for layer in layers if layer not in norms} == {compute}
    assert {v.dtype for v in trainer.model.trainable_variables} == {"float32"}
    ops = loop_ops(trainer, batches[:1])
    assert set(op_dtypes(ops, "Softmax")) == {"float32"}
    assert compute in op_dtypes(ops, "MatMul")  # the dense layers' matmuls
    if compute == "float32":
        assert set(op_dtypes(ops, "MatMul", "BatchMatMulV2")) == {"float32"}


def test_metrics_are_the_original_losses():
    batches = feature_batches(1, 8, SEQ, PRED, seed=5)
    trainer = make_trainer()
    features = {k: tf.constant(v) for k, v in batches[0].items()}
    expected = trainer.model.compute_losses(trainer.model(features, training=False), features)
    _, metrics = run(trainer, batches)
    for name in ("loss", "masked_lm_loss", "masked_lm_accuracy", "next_sentence_loss", "next_sentence_accuracy"):
        np.testing.assert_allclose(metrics[name], float(expected[name]), rtol=1e-5, err_msg=name)
    assert metrics["learning_rate"] == 0.0  # step 0 of the warmup
    assert metrics["grad_norm"] > 0

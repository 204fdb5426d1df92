"""Dropout under data parallelism: each replica (and each micro-batch) draws its own masks, deterministically.

MirroredStrategy over two logical CPUs needs its devices configured before TensorFlow starts, so the checks run in
a subprocess and report their numbers as JSON; the tests below assert on them. The check of the XLA-compiled step
on two replicas (the GPU platforms' configuration) runs in a process of its own, in the large tier.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from helpers import REPO, python_path_env

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

# What both subprocesses start with: two logical CPUs, the tiny model, a batch, and Trainer steps.
SETUP = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from bert_tf.modeling.dropout import dropout_stream
    from bert_tf.optimizers.optimization import create_optimizer
    from bert_tf.training.pretraining import create_pretrainer
    from bert_tf.training.recipe import load_recipe
    from bert_tf.training.strategy import worker_layout
    from bert_tf.training.trainer import Trainer
    from helpers import tiny_config
    from pretraining_records import VOCAB_SIZE, feature_batches

    SEQ, PRED = 16, 4
    config = tiny_config(vocab_size=VOCAB_SIZE, max_position_embeddings=SEQ)  # dropout 0.1 everywhere
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    one_device = tf.distribute.get_strategy()
    x = feature_batches(1, 4, SEQ, PRED, seed=5)[0]
    report = {}

    # Optimizer steps of the Trainer on global batches whose replica halves are the same sequences.
    def trainer(strategy, max_micro_batch_size=None, jit_compile=False):
        recipe = load_recipe("demo_cpu").override({"num_train_steps": 10, "num_warmup_steps": 0, "learning_rate": 1e-2})
        keras.utils.set_random_seed(7)
        with strategy.scope():
            model = create_pretrainer(config)
            optimizer = create_optimizer(recipe)
        return Trainer(strategy, worker_layout(strategy), model, optimizer, max_micro_batch_size=max_micro_batch_size,
                       jit_compile=jit_compile)

    def step(trainer, batch):
        data = tf.data.Dataset.from_tensor_slices({k: v[None] for k, v in batch.items()})
        trainer.train_loop(iter(data), tf.constant(1))
        return np.concatenate([v.numpy().ravel() for v in trainer.model.trainable_variables])

    doubled = {k: np.concatenate([v, v]) for k, v in x.items()}
""")

CHECKS = textwrap.dedent("""
    # The model on both replicas, the same features, training=True, with and without the replica's stream.
    keras.utils.set_random_seed(3)
    with mirrored.scope():
        model = create_pretrainer(config)

    def forward(streams):
        def replica_fn():
            ctx = tf.distribute.get_replica_context()
            if not streams:
                return model(x, training=True)["mlm_logits"]
            with dropout_stream(ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync):
                return model(x, training=True)["mlm_logits"]
        return [v.numpy() for v in mirrored.experimental_local_results(tf.function(
            lambda: mirrored.run(replica_fn))())]

    for streams in (False, True):
        first, second = forward(streams)
        report[f"replicas_differ_streams_{streams}"] = float(np.abs(first - second).max())
    # A fine-tuning model trained by Keras `fit` is called on each replica the same way: it opens the stream.
    from bert_tf.finetuning import BertClassifier
    with mirrored.scope():
        classifier = BertClassifier(config, num_classes=2)
    inputs = {k: x[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    first, second = [v.numpy() for v in mirrored.experimental_local_results(tf.function(
        lambda: mirrored.run(lambda: classifier(inputs, training=True)))())]
    report["classifier_replicas_differ"] = float(np.abs(first - second).max())
    one = step(trainer(one_device), x)
    two_replicas = trainer(mirrored)
    start = [v.numpy() for v in two_replicas.model.variables + two_replicas.optimizer.variables]
    two = step(two_replicas, doubled)
    report["two_replicas_vs_one_device"] = float(np.abs(two - one).max())
    # Back to the state before the step (weights, optimizer, dropout RNG): the step repeats exactly.
    for v, value in zip(two_replicas.model.variables + two_replicas.optimizer.variables, start):
        v.assign(value)
    report["two_replicas_repeated"] = float(np.abs(step(two_replicas, doubled) - two).max())
    report["micro_batches_vs_one"] = float(np.abs(step(trainer(one_device, 4), doubled) - one).max())
    print("REPORT " + json.dumps(report))
""")

# XLA draws with its own random-number algorithm: compiled runs compare with compiled (each trainer seeds itself).
XLA_CHECK = textwrap.dedent("""
    report["two_replicas_vs_one_device_xla"] = float(np.abs(
        step(trainer(mirrored, jit_compile=True), doubled) - step(trainer(one_device, jit_compile=True), x)).max())
    print("REPORT " + json.dumps(report))
""")


def run_checks(checks):
    done = subprocess.run([sys.executable, "-c", SETUP + checks], cwd=REPO, env=python_path_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("REPORT "))
    return json.loads(line[len("REPORT "):])


@pytest.fixture(scope="module")
def report():
    return run_checks(CHECKS)


def test_replicas_draw_different_masks_for_the_same_inputs(report):
    # Keras alone: the mirrored seed state gives both replicas the same masks, so the same logits.
    assert report["replicas_differ_streams_False"] == 0.0
    # Each replica on its own stream: the same inputs give different logits.
    assert report["replicas_differ_streams_True"] > 1e-3


def test_fine_tuning_models_draw_different_masks_on_each_replica(report):
    assert report["classifier_replicas_differ"] > 1e-4


def test_trainer_steps_draw_per_replica_and_per_micro_batch(report):
    """Two replicas on [x, x] would equal one device on x (to float rounding) if both replicas drew one mask;
    likewise two micro-batches [x, x] on one device if both micro-batches drew one mask."""
    assert report["two_replicas_vs_one_device"] > 1e-4
    assert report["micro_batches_vs_one"] > 1e-4


def test_per_replica_dropout_is_deterministic(report):
    """The same state twice gives the same step: the masks are a function of the seed state (checkpointed), the
    replica and the micro-batch only, so a resumed run draws what the uninterrupted one drew."""
    assert report["two_replicas_repeated"] == 0.0


@pytest.mark.large
def test_replica_streams_reach_the_xla_compiled_step():
    assert run_checks(XLA_CHECK)["two_replicas_vs_one_device_xla"] > 1e-4

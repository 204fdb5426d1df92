"""What each worker saves and where a run resumes: the chief saves the whole state, another worker only its own
part (its iterators, RNG, step, phase) and restores the model and optimizer from the chief's checkpoint; the number
of input pipelines travels with the checkpoint and a resume on another number stops unless the input restarts.
(The same on real worker processes: tests/test_distributed_training.py.)"""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.optimizers.optimization import create_optimizer
from bert_tf.training.checkpointing import (
    ResumePoint,
    TrainingCheckpoint,
    checkpoint_dir,
    newest_common_step,
    resume_point,
)
from bert_tf.training.input_hosts import HostIterator
from bert_tf.training.pretraining import create_pretrainer
from bert_tf.training.recipe import load_recipe
from bert_tf.training.strategy import worker_layout
from helpers import tiny_config
from pretraining_records import VOCAB_SIZE, feature_batches

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

STRATEGY = tf.distribute.get_strategy()
ONE_PROCESS = worker_layout(STRATEGY)
# This process as worker 0 (the chief) or 1 of two: two input pipelines over all workers.
CHIEF, WORKER_1 = (dataclasses.replace(ONE_PROCESS, num_replicas=2, num_workers=2, worker_index=i) for i in (0, 1))


def training_state(seed):
    keras.utils.set_random_seed(seed)
    model = create_pretrainer(tiny_config(vocab_size=VOCAB_SIZE, max_position_embeddings=16))
    model({k: tf.constant(v) for k, v in feature_batches(1, 2, 16, 4)[0].items()})
    optimizer = create_optimizer(load_recipe("demo_cpu"))
    optimizer.build(model.trainable_variables)
    return model, optimizer, tf.Variable(0, dtype=tf.int64), tf.Variable(tf.zeros([3]))


def save(model_dir, layout, state, step, iterator):
    model, optimizer, phase, window = state
    optimizer.iterations.assign(step)
    phase.assign(1)
    checkpoint = TrainingCheckpoint(directory=checkpoint_dir(model_dir, layout), model=model, optimizer=optimizer,
                                    phase=phase, iterators=(iterator,), layout=layout, metric_window=window)
    return checkpoint, checkpoint.save(step)


def test_a_worker_saves_its_own_part_and_restores_the_model_from_the_chiefs(tmp_path):
    model_dir = str(tmp_path)
    chief = training_state(seed=1)
    save(model_dir, CHIEF, chief, 8, iter(tf.data.Dataset.range(100)))
    iterator = iter(tf.data.Dataset.range(100))
    next(iterator), next(iterator)
    _, path = save(model_dir, WORKER_1, training_state(seed=2), 8, iterator)
    keys = {name.split("/")[0] for name, _ in tf.train.list_variables(path)}
    assert keys == {"step", "phase", "dropout_rng", "metric_window", "iterator", "input_pipelines",
                    "save_counter", "_CHECKPOINTABLE_OBJECT_GRAPH"}  # no model, no optimizer slots

    # Worker 1 restarted: the model and optimizer come from the chief's checkpoint, its iterator from its own.
    model, optimizer, phase, window = restarted = training_state(seed=3)
    resumed = iter(tf.data.Dataset.range(100))
    checkpoint, _ = save(str(tmp_path / "scratch"), WORKER_1, restarted, 0, resumed)
    phase.assign(0)
    point = ResumePoint(step=8, phase=1, path=path, chief_path=str(tmp_path / "ckpt-8"))
    checkpoint.restore(point, with_iterator=True)
    assert int(optimizer.iterations.numpy()) == 8 and int(phase.numpy()) == 1 and int(next(resumed)) == 2
    for got, expected in zip(model.weights, chief[0].weights):
        np.testing.assert_array_equal(got.numpy(), expected.numpy(), err_msg=got.path)


def test_the_newest_step_every_worker_has_and_sees_in_the_chiefs_directory():
    # The chief saved step 12, worker 1 died before it did: both resume from 8.
    assert newest_common_step([[4, 8, 12], [4, 8]], [[4, 8, 12], [4, 8, 12]], "run") == 8
    assert newest_common_step([[4, 8], [4, 8, 12]], [[4, 8], [4, 8]], "run") == 8
    assert newest_common_step([[4], []], [[4], [4]], "run") is None  # nothing in common: a fresh start
    assert newest_common_step([[]], [[]], "run") is None
    with pytest.raises(InputError, match=r"Worker\(s\) \[1\] see none of the chief's checkpoints of steps \[4, 8\] "
                                         r"in --model_dir=run: .* must be storage every worker reads"):
        newest_common_step([[4, 8], [4, 8]], [[4, 8], []], "run")


def test_another_number_of_input_pipelines_stops_unless_the_input_restarts(tmp_path):
    model_dir = str(tmp_path)
    save(model_dir, CHIEF, training_state(seed=1), 8, iter(tf.data.Dataset.range(3)))
    with pytest.raises(InputError, match=r"ckpt-8 was written with 2 input pipeline\(s\) \(one per input host\) "
                                         r"and this run has 1: .* pass --set=restart_input_on_resize=true"):
        resume_point(STRATEGY, ONE_PROCESS, model_dir)
    point = resume_point(STRATEGY, ONE_PROCESS, model_dir, restart_input_on_resize=True)
    assert (point.step, point.phase, point.restore_input) == (8, 1, False)
    save(str(tmp_path / "same"), ONE_PROCESS, training_state(seed=1), 8, iter(tf.data.Dataset.range(3)))
    assert resume_point(STRATEGY, ONE_PROCESS, str(tmp_path / "same")).restore_input


def test_asynchronous_checkpoints_hold_the_state_of_the_step_they_are_named_after(tmp_path):
    """Training goes on while an asynchronous checkpoint is written: each must hold the iterator's position and the
    weights of its `save` call (the host iterator was written as it was later, and Keras variables raised from the
    second save on)."""
    state = training_state(seed=1)
    bias = next(v for v in state[0].weights if v.path == "cls/seq_relationship/output_bias")
    iterator = iter(tf.data.Dataset.range(100).shuffle(10, seed=1))
    checkpoint = TrainingCheckpoint(directory=str(tmp_path), model=state[0], optimizer=state[1], phase=state[2],
                                    iterators=(iterator,), layout=ONE_PROCESS, metric_window=state[3],
                                    async_write=True)
    expected = {}
    for step in (1, 2, 3):
        bias.assign([float(step)] * 2)
        path = checkpoint.save(step)
        expected[path] = (step, int(next(iterator)))  # the record the restored iterator must yield first
        next(iterator)
    checkpoint.wait()
    for path, (step, record) in expected.items():
        restored = iter(tf.data.Dataset.range(100).shuffle(10, seed=1))
        tf.train.Checkpoint(iterator=HostIterator(restored, "/cpu:0")).restore(path).expect_partial()
        assert int(next(restored)) == record, path
        saved_bias = tf.train.load_variable(path, "model/next_sentence/output_bias/.ATTRIBUTES/VARIABLE_VALUE")
        assert saved_bias.tolist() == [step, step], path

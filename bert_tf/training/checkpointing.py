"""The training state on disk: model, optimizer, step, phase, input iterator, dropout RNG and the metrics of the
log row under way, in `--model_dir`.

`tf.train.CheckpointManager` writes `ckpt-N.*` and then replaces the `checkpoint` state file, so a run killed
while saving leaves the previous checkpoint as the latest (checked in the tests). The model is stored under the
key `model`, so `bert_tf.load_pretrainer(model_dir)` reads a pre-training directory directly.

The input iterators are saved too, one per input host (see `input_hosts`): under the key `iterator` when the
worker has one host, `iterator_host_0`, `iterator_host_1`, ... when it drives several (a TPU pod). With several
workers (MultiWorkerMirroredStrategy) every worker saves, because each has its own input iterator: the chief into
`model_dir`, worker i into `model_dir/workers/worker_i`. Each restores its own.
"""

import os

import tensorflow as tf
from absl import logging

from bert_tf import model_dir as model_dir_lib
from bert_tf.compat.tensorflow_internals import OBJECT_GRAPH_KEY
from bert_tf.training.extended_vocab import extended_rows, restore_with_new_rows
from bert_tf.training.input_hosts import HostIterator

CHECKPOINT_NAME = "ckpt"
# The global step is the optimizer's update count (the inner optimizer's under a LossScaleOptimizer).
_STEP_KEYS = ("optimizer/inner_optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
              "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")
_PHASE_KEY = "phase/.ATTRIBUTES/VARIABLE_VALUE"


def checkpoint_dir(model_dir, layout):
    """Where this worker's checkpoints go: `model_dir` for the chief, `model_dir/workers/worker_i` otherwise."""
    return model_dir if layout.is_chief else os.path.join(model_dir, "workers", f"worker_{layout.worker_index}")


def saved_position(directory):
    """(path, step, phase index) of the latest checkpoint in `directory`, or None when there is none."""
    path = tf.train.latest_checkpoint(directory)
    if path is None:
        return None
    keys = {name for name, _ in tf.train.list_variables(path)}
    step_key = next((key for key in _STEP_KEYS if key in keys), None)
    if step_key and _PHASE_KEY in keys:
        return path, int(tf.train.load_variable(path, step_key)), int(tf.train.load_variable(path, _PHASE_KEY))
    raise ValueError(
        f"{path} is not a bert-pretrain training checkpoint (it has no step/phase): to start from converted "
        f"weights pass that directory as --init_checkpoint and choose a new --model_dir.")


class TrainingCheckpoint:
    """A `tf.train.CheckpointManager` over the whole training state of one phase.

    Every argument is keyword-only.

    Args:
        directory: this worker's checkpoint directory (see `checkpoint_dir`).
        model, optimizer: the `BertPretrainer` and its optimizer (whose update count is the global step).
        phase: an int64 `tf.Variable` holding the index of the phase being trained.
        iterators: the phase's input iterators, one per host of `hosts` (plain `iter(dataset)`s).
        hosts: this worker's `InputHost`s.
        metric_window: the `MetricWindow.sums` variable of the log row under way.
        max_to_keep: checkpoints kept (the original Estimator kept 5).

    Example:
    >>> ckpt = TrainingCheckpoint(directory=model_dir, model=model, optimizer=optimizer, phase=phase,
    ...                           iterators=iterators, hosts=layout.hosts, metric_window=window.sums)  # doctest: +SKIP
    >>> ckpt.save(1000)  # doctest: +SKIP
    '.../ckpt-1000'
    """

    def __init__(self, *, directory, model, optimizer, phase, iterators, hosts, metric_window, max_to_keep=5):
        self.optimizer, self.phase = optimizer, phase
        # Dropout draws from Keras seed-generator states, which the model's checkpoint does not hold.
        rng = {f"generator_{i}": v for i, v in enumerate(
            v for v in model.non_trainable_variables if "seed_generator" in v.path)}
        self.state = dict(model=model, optimizer=optimizer, phase=phase, dropout_rng=rng)
        self.metric_window = metric_window
        self.iterators = iterator_keys(iterators, hosts)
        self.checkpoint = tf.train.Checkpoint(**self.state, metric_window=metric_window, **self.iterators)
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=max_to_keep,
                                                  checkpoint_name=CHECKPOINT_NAME)

    def save(self, step):
        path = self.manager.save(checkpoint_number=step)
        logging.info("Saved checkpoint %s", path)
        return path

    def restore(self, path, with_iterator):
        """Restores everything from `path`; the iterator only when it was saved in this same phase (a checkpoint
        taken at the end of the previous phase holds that phase's iterator)."""
        # Separate restores, because a restore that spans several tasks (the iterators of a pod's hosts) runs in a
        # tf.function, where Keras variables refuse the restored tensors of unknown shape; the model, optimizer
        # and RNG are all read from the first task's devices.
        tf.train.Checkpoint(**self.state).restore(path).expect_partial().assert_existing_objects_matched()
        # A host variable, restored on its own; checkpoints written before it existed lack it (it stays empty).
        if any(name.startswith("metric_window/") for name, _ in tf.train.list_variables(path)):
            tf.train.Checkpoint(metric_window=self.metric_window).restore(path).expect_partial() \
                .assert_existing_objects_matched()
        if with_iterator:
            # The iterators of other hosts are restored asynchronously: the scope's exit waits for them.
            with tf.experimental.async_scope():
                status = tf.train.Checkpoint(**self.iterators).restore(path).expect_partial()
            status.assert_existing_objects_matched()
        logging.info("Restored %s (step %d)%s", path, int(self.optimizer.iterations.numpy()),
                     "" if with_iterator else "; the input starts afresh for the new phase")


def iterator_keys(iterators, hosts):
    """The checkpoint's input iterators by key: `iterator` for a single host (the key runs have always used),
    `iterator_host_<i>` for host i of several.

    >>> from bert_tf.training.input_hosts import group_by_host
    >>> hosts = group_by_host(["/job:worker/task:0/device:CPU:0", "/job:worker/task:1/device:CPU:0"])
    >>> sorted(iterator_keys([iter([]), iter([])], hosts))
    ['iterator_host_0', 'iterator_host_1']
    """
    if len(iterators) != len(hosts):
        raise ValueError(f"Got {len(iterators)} iterator(s) for {len(hosts)} input host(s): pass one per host.")
    wrapped = [HostIterator(iterator, host.device) for iterator, host in zip(iterators, hosts)]
    if len(wrapped) == 1:
        return {"iterator": wrapped[0]}
    return {f"iterator_host_{host.index}": w for host, w in zip(hosts, wrapped)}


def restore_model_weights(model, init_checkpoint, vocab_file=None):
    """Loads only the model's weights from a converted checkpoint directory (or a `ckpt-N` prefix), as the
    original `--init_checkpoint` did; optimizer slots and step start fresh. When `vocab_file` extends the
    checkpoint's vocab.txt (`bert-vocab --extend`), its new rows start from the mean of their old pieces' rows
    (see `extended_vocab`)."""
    path = (model_dir_lib.latest_checkpoint(init_checkpoint) if tf.io.gfile.isdir(init_checkpoint)
            else init_checkpoint)
    try:
        keys = {name for name, _ in tf.train.list_variables(path)}
    except (tf.errors.OpError, ValueError):
        raise ValueError(f"--init_checkpoint={init_checkpoint} is not a bert_tf checkpoint (TensorFlow cannot read it "
                         f"as one): pass a directory written by bert-convert or bert-pretrain.") from None
    if OBJECT_GRAPH_KEY not in keys or not any(k.startswith("model/") for k in keys):
        raise ValueError(f"--init_checkpoint={init_checkpoint} is not a bert_tf checkpoint (no `model` object): "
                         f"convert a released TF1 or HF checkpoint first with `bert-convert --from tf1|hf`.")
    is_dir = tf.io.gfile.isdir(init_checkpoint)
    rows = extended_rows(init_checkpoint, vocab_file) if is_dir else {}
    size = model_dir_lib.read_config(init_checkpoint).vocab_size if is_dir and model_dir_lib.has_config(
        init_checkpoint) else model.config.vocab_size
    restore_with_new_rows(model, path, rows, size)
    logging.info("Initialized the model from %s", path)
    return path

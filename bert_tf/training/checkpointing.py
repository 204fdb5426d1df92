"""The training state on disk: model, optimizer, step, phase, input iterators, dropout RNG and the metrics of the
log row under way, in `--model_dir`.

`tf.train.CheckpointManager` writes `ckpt-N.*` and then replaces the `checkpoint` state file, so a run killed
while saving leaves the previous checkpoint as the latest (checked in the tests); so does an asynchronous write
(`async_checkpoints`), whose state file is replaced by the writing thread once the files are complete. The model
is stored under the key `model`, so `bert_tf.load_pretrainer(model_dir)` reads a pre-training directory directly.

The input iterators are saved too, one per input host (see `input_hosts`): under the key `iterator` when the
worker has one host, `iterator_host_0`, `iterator_host_1`, ... when it drives several (a TPU pod), with the number
of input pipelines over all workers (`input_pipelines`): their iterators' positions mean nothing to another count
(each pipeline reads its own share of the records), so a resume with another count stops, unless the recipe's
`restart_input_on_resize` restarts the phase's input. With several workers (MultiWorkerMirroredStrategy) the chief
saves the whole state into `model_dir`; worker i saves only what is its own (its iterators, the dropout RNG, the
step, phase and log row under way) into `model_dir/workers/worker_i`, and restores the model and optimizer from
the chief's checkpoint of the same step, so `model_dir` must be storage every worker reads. A restart resumes from
the newest step that every worker has (a crash during a save can leave one worker a step ahead).
"""

import dataclasses
import os

import tensorflow as tf
from absl import logging

from bert_tf import model_dir as model_dir_lib
from bert_tf.compat.tensorflow_internals import OBJECT_GRAPH_KEY, copy_keras_variables_once_for_async_checkpoints
from bert_tf.errors import InputError
from bert_tf.training.extended_vocab_restore import extended_rows, restore_with_new_rows
from bert_tf.training.input_hosts import HostIterator
from bert_tf.training.strategy import gather_over_workers

CHECKPOINT_NAME = "ckpt"
# The global step is the optimizer's update count (the inner optimizer's under a LossScaleOptimizer); a worker
# other than the chief saves it on its own, under `step`.
_STEP_KEYS = ("optimizer/inner_optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
              "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE", "step/.ATTRIBUTES/VARIABLE_VALUE")
_PHASE_KEY = "phase/.ATTRIBUTES/VARIABLE_VALUE"
_PIPELINES_KEY = "input_pipelines/.ATTRIBUTES/VARIABLE_VALUE"


def checkpoint_dir(model_dir, layout):
    """Where this worker's checkpoints go: `model_dir` for the chief, `model_dir/workers/worker_i` otherwise."""
    return model_dir if layout.is_chief else os.path.join(model_dir, "workers", f"worker_{layout.worker_index}")


def checkpoint_steps(directory):
    """The steps of the checkpoints `directory`'s state file lists (`ckpt-<step>`), in increasing order.

    >>> checkpoint_steps("/nonexistent")
    []
    """
    state = tf.train.get_checkpoint_state(directory)
    if state is None:
        return []
    paths = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
    return sorted({int(path.rsplit("-", 1)[1]) for path in paths if path.rsplit("-", 1)[-1].isdigit()})


@dataclasses.dataclass(frozen=True)
class ResumePoint:
    """The checkpoint a run resumes from: the newest step every worker has.

    Attributes:
        step, phase: the global step and the index of the phase it was saved in.
        path: this worker's checkpoint of that step.
        chief_path: the chief's checkpoint of that step, which holds the model and optimizer (`path` for the chief).
        restore_input: whether the input iterators resume where they were (False when the input restarts because
            the number of input hosts changed, see `restart_input_on_resize`).
    """

    step: int
    phase: int
    path: str
    chief_path: str
    restore_input: bool = True


def resume_point(strategy, layout, model_dir, restart_input_on_resize=False):
    """The `ResumePoint` of this worker (None for a fresh run), agreed by all workers: the newest step that every
    worker has a checkpoint of, and that each sees in the chief's directory.

    Raises `InputError` when the checkpoint was written with another number of input pipelines (unless
    `restart_input_on_resize`), when it is not a pre-training checkpoint, and when workers have checkpoints of a
    common step but some worker does not see the chief's (its `model_dir` is not shared storage).

    >>> from bert_tf.training.strategy import worker_layout
    >>> strategy = tf.distribute.get_strategy()
    >>> resume_point(strategy, worker_layout(strategy), "/nonexistent") is None
    True
    """
    directory = checkpoint_dir(model_dir, layout)
    own = checkpoint_steps(directory)
    owns = [[int(s) for s in steps] for steps in gather_over_workers(strategy, layout, own)]
    seen = [[int(s) for s in steps] for steps in gather_over_workers(
        strategy, layout, own if layout.is_chief else checkpoint_steps(model_dir))]
    step = newest_common_step(owns, seen, model_dir)
    if step is None:
        return None
    if step < max(own):
        logging.warning("Resuming from step %d, the newest every worker has; this worker's checkpoints of steps %s "
                        "are left behind (training writes them again).", step, [s for s in own if s > step])
    path = os.path.join(directory, f"{CHECKPOINT_NAME}-{step}")
    phase, pipelines = _saved_position(path)
    restore_input = pipelines is None or pipelines == layout.num_input_pipelines
    if not restore_input and not restart_input_on_resize:
        raise InputError(
            f"{path} was written with {pipelines} input pipeline(s) (one per input host) and this run has "
            f"{layout.num_input_pipelines}: their positions in the input do not carry over; resume on the same "
            f"number of hosts, or pass --set=restart_input_on_resize=true to read the phase's input again from its "
            f"start (records already trained on in this phase are read again).")
    if not restore_input:
        logging.warning("The checkpoint's %d input pipeline(s) are now %d: the input of phase %d starts again from "
                        "its first records (restart_input_on_resize).", pipelines, layout.num_input_pipelines, phase)
    return ResumePoint(step=step, phase=phase, path=path,
                       chief_path=os.path.join(model_dir, f"{CHECKPOINT_NAME}-{step}"), restore_input=restore_input)


def newest_common_step(owns, seen, model_dir):
    """The newest step of which every worker has a checkpoint (`owns[w]`: worker w's steps) and which every worker
    sees in the chief's directory (`seen[w]`), or None when there is none (a fresh start).

    >>> newest_common_step([[4, 8, 12], [4, 8]], [[4, 8, 12], [4, 8, 12]], "gs://bucket/run")  # 12 cut short
    8
    """
    every_worker = set(owns[0]).intersection(*owns)
    common = every_worker.intersection(*seen)
    if every_worker and not common:
        raise InputError(
            f"Worker(s) {[w for w, steps in enumerate(seen) if not set(steps) & every_worker]} see none of the "
            f"chief's checkpoints of steps {sorted(every_worker)} in --model_dir={model_dir}: the chief alone "
            f"saves the model and optimizer, so model_dir must be storage every worker reads (gs://, a shared "
            f"file system), as the same path on every worker.")
    if not common:
        if any(owns):
            logging.warning("No checkpoint step is common to every worker (their steps: %s): starting afresh.",
                            owns)
        return None
    return max(common)


def _saved_position(path):
    """(phase index, input pipelines or None when the checkpoint predates them) saved in `path`."""
    keys = {name for name, _ in tf.train.list_variables(path)}
    if not keys & set(_STEP_KEYS) or _PHASE_KEY not in keys:
        raise InputError(
            f"{path} is not a bert-pretrain training checkpoint (it has no step/phase): to start from converted "
            f"weights pass that directory as --init_checkpoint and choose a new --model_dir.")
    pipelines = int(tf.train.load_variable(path, _PIPELINES_KEY)) if _PIPELINES_KEY in keys else None
    return int(tf.train.load_variable(path, _PHASE_KEY)), pipelines


class TrainingCheckpoint:
    """A `tf.train.CheckpointManager` over the training state of one phase that this worker saves: the whole state
    on the chief; on another worker only its own part (iterators, dropout RNG, step, phase, log row under way),
    the model and optimizer being the chief's.

    Every argument is keyword-only.

    Args:
        directory: this worker's checkpoint directory (see `checkpoint_dir`).
        model, optimizer: the `BertPretrainer` and its optimizer (whose update count is the global step).
        phase: an int64 `tf.Variable` holding the index of the phase being trained.
        iterators: the phase's input iterators, one per host of `layout.hosts` (plain `iter(dataset)`s).
        layout: this worker's `WorkerLayout`.
        metric_window: the `MetricWindow.sums` variable of the log row under way.
        max_to_keep: checkpoints kept (the original Estimator kept 5).
        async_write: write in a background thread (`tf.train.CheckpointOptions(enable_async=True)`): `save`
            copies the state to host memory and returns, training goes on while the files are written, and the
            state file names the checkpoint once they are complete. `wait` waits for the write under way.

    Example:
    >>> ckpt = TrainingCheckpoint(directory=model_dir, model=model, optimizer=optimizer, phase=phase,
    ...                           iterators=iterators, layout=layout, metric_window=window.sums)  # doctest: +SKIP
    >>> ckpt.save(1000)  # doctest: +SKIP
    '.../ckpt-1000'
    """

    def __init__(self, *, directory, model, optimizer, phase, iterators, layout, metric_window, max_to_keep=5,
                 async_write=False):
        self.optimizer = optimizer
        self.options = tf.train.CheckpointOptions(enable_async=True) if async_write else None
        if async_write:
            copy_keras_variables_once_for_async_checkpoints()
        self.shared = dict(model=model, optimizer=optimizer)
        # Dropout draws from Keras seed-generator states, which the model's checkpoint does not hold.
        rng = {f"generator_{i}": v for i, v in enumerate(
            v for v in model.non_trainable_variables if "seed_generator" in v.path)}
        self.own = dict(phase=phase, dropout_rng=rng)
        self.metric_window = metric_window
        self.iterators = iterator_keys(iterators, layout.hosts)
        saved = dict(self.shared) if layout.is_chief else dict(step=optimizer.iterations)
        # Read back by `resume_point` (never restored into a variable): what the iterators' positions mean.
        saved["input_pipelines"] = tf.Variable(layout.num_input_pipelines, dtype=tf.int64, trainable=False)
        self.checkpoint = tf.train.Checkpoint(**saved, **self.own, metric_window=metric_window, **self.iterators)
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=max_to_keep,
                                                  checkpoint_name=CHECKPOINT_NAME)

    def save(self, step):
        path = self.manager.save(checkpoint_number=step, options=self.options)
        logging.info("%s checkpoint %s", "Writing" if self.options else "Saved", path)
        return path

    def wait(self):
        """Returns once the checkpoint being written (asynchronously) is complete."""
        self.manager.sync()

    def restore(self, point, with_iterator):
        """Restores the state of the `ResumePoint` `point`: the model and optimizer from the chief's checkpoint, the
        rest from this worker's; the iterators only when `with_iterator` (the checkpoint was saved in this same
        phase: one taken at the end of the previous phase holds that phase's iterators)."""
        # Separate restores, because a restore that spans several tasks (the iterators of a pod's hosts) runs in a
        # tf.function, where Keras variables refuse the restored tensors of unknown shape; the model, optimizer
        # and RNG are all read from the first task's devices.
        tf.train.Checkpoint(**self.shared).restore(point.chief_path).expect_partial() \
            .assert_existing_objects_matched()
        tf.train.Checkpoint(**self.own).restore(point.path).expect_partial().assert_existing_objects_matched()
        # A host variable, restored on its own; checkpoints written before it existed lack it (it stays empty).
        if any(name.startswith("metric_window/") for name, _ in tf.train.list_variables(point.path)):
            tf.train.Checkpoint(metric_window=self.metric_window).restore(point.path).expect_partial() \
                .assert_existing_objects_matched()
        if with_iterator:
            # The iterators of other hosts are restored asynchronously: the scope's exit waits for them.
            with tf.experimental.async_scope():
                status = tf.train.Checkpoint(**self.iterators).restore(point.path).expect_partial()
            status.assert_existing_objects_matched()
        logging.info("Restored %s (step %d)%s", point.path, int(self.optimizer.iterations.numpy()),
                     "" if with_iterator else "; the input starts afresh")


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
    (see `training/extended_vocab_restore.py`)."""
    path = (model_dir_lib.latest_checkpoint(init_checkpoint) if tf.io.gfile.isdir(init_checkpoint)
            else init_checkpoint)
    try:
        keys = {name for name, _ in tf.train.list_variables(path)}
    except (tf.errors.OpError, ValueError):
        raise InputError(f"--init_checkpoint={init_checkpoint} is not a bert_tf checkpoint (TensorFlow cannot read it "
                         f"as one): pass a directory written by bert-convert or bert-pretrain.") from None
    if OBJECT_GRAPH_KEY not in keys or not any(k.startswith("model/") for k in keys):
        raise InputError(f"--init_checkpoint={init_checkpoint} is not a bert_tf checkpoint (no `model` object): "
                         f"convert a released TF1 or HF checkpoint first with `bert-convert --from tf1|hf`.")
    is_dir = tf.io.gfile.isdir(init_checkpoint)
    rows = extended_rows(init_checkpoint, vocab_file) if is_dir else {}
    size = model_dir_lib.read_config(init_checkpoint).vocab_size if is_dir and model_dir_lib.has_config(
        init_checkpoint) else model.config.vocab_size
    restore_with_new_rows(model, path, rows, size)
    logging.info("Initialized the model from %s", path)
    return path

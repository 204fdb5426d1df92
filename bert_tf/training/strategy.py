"""Where training runs: the `--strategy` choices, and how a worker's batches reach its replicas.

The input is one plain `iter(dataset)` per worker (one input pipeline per worker process), split per replica with
`strategy.experimental_distribute_values_from_function`. `tf.train.Checkpoint` cannot save the iterator of
`strategy.experimental_distribute_dataset` (tensorflow#56372); a plain iterator it can, so a resumed run reads on
from the exact record where the checkpoint was taken.
"""

import dataclasses

import tensorflow as tf
from absl import logging

STRATEGIES = ("tpu", "mirrored", "multi_worker", "one_device", "default")


def create_strategy(name, tpu=None):
    """The `tf.distribute.Strategy` for a `--strategy` value.

    tpu: `TPUStrategy` on the TPU named by `tpu` (a name, grpc:// address or "local"), initialised here.
    mirrored: `MirroredStrategy` over all local GPUs (the CPU when there is none).
    multi_worker: `MultiWorkerMirroredStrategy`; the cluster comes from the TF_CONFIG environment variable.
    one_device: `OneDeviceStrategy` on the first GPU, else the CPU.
    default: the default strategy (no distribution; the device TensorFlow picks).

    Example:
    >>> strategy = create_strategy("one_device")
    >>> strategy.num_replicas_in_sync
    1
    """
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    if tpu:
        raise ValueError(f"--tpu={tpu!r} is only used with --strategy=tpu (got --strategy={name}).")
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "default":
        return tf.distribute.get_strategy()
    raise ValueError(f"--strategy={name!r} is unknown: use one of {', '.join(STRATEGIES)}.")


@dataclasses.dataclass(frozen=True)
class WorkerLayout:
    """How the replicas are spread over worker processes (input pipelines).

    Attributes:
        num_replicas: replicas in sync over all workers.
        local_replicas: replicas of this worker.
        num_pipelines: worker processes, each with its own input pipeline.
        pipeline_id: this worker's index (0 is the chief).
    """

    num_replicas: int
    local_replicas: int
    num_pipelines: int
    pipeline_id: int

    @property
    def is_chief(self):
        return self.pipeline_id == 0

    def input_context(self):
        return tf.distribute.InputContext(num_input_pipelines=self.num_pipelines,
                                          input_pipeline_id=self.pipeline_id,
                                          num_replicas_in_sync=self.num_replicas)

    def worker_batch_size(self, global_batch_size):
        """The batch this worker's pipeline yields; the global batch must split evenly over all replicas."""
        if global_batch_size % self.num_replicas:
            raise ValueError(
                f"train_batch_size={global_batch_size} does not split evenly over {self.num_replicas} replicas: "
                f"use a multiple of {self.num_replicas}.")
        return global_batch_size // self.num_pipelines


def worker_layout(strategy):
    """This process's `WorkerLayout`, read from the replica ids the strategy gives its local replicas."""
    ids = strategy.experimental_local_results(
        strategy.experimental_distribute_values_from_function(lambda ctx: ctx.replica_id_in_sync_group))
    local = len(ids)
    num_replicas = strategy.num_replicas_in_sync
    layout = WorkerLayout(num_replicas=num_replicas, local_replicas=local, num_pipelines=num_replicas // local,
                          pipeline_id=int(min(ids)) // local)
    logging.info("Strategy %s: %s", type(strategy).__name__, layout)
    return layout


def split_per_replica(strategy, layout, batch):
    """A worker's batch (a dict of [worker_batch, ...] tensors) as per-replica slices for `strategy.run`."""
    if layout.local_replicas == 1:
        return strategy.experimental_distribute_values_from_function(lambda ctx: batch)

    def replica_slice(ctx):
        local = ctx.replica_id_in_sync_group % layout.local_replicas
        return {name: _slice(value, local, layout.local_replicas) for name, value in batch.items()}

    return strategy.experimental_distribute_values_from_function(replica_slice)


def _slice(value, index, parts):
    size = value.shape[0] // parts
    return value[index * size:(index + 1) * size]


def check_same_on_all_workers(strategy, layout, name, value):
    """Raises unless the integer `value` is the same on every worker (e.g. the step each one restored)."""
    if layout.num_pipelines == 1:
        return
    # Only SUM and MEAN exist as cross-replica reductions: the values are all equal exactly when
    # n * sum(v^2) == sum(v)^2, and every worker computes the same two sums, so all reach the same verdict.
    def first_local_replica_only(ctx):
        counted = ctx.replica_id_in_sync_group % layout.local_replicas == 0
        return tf.constant([float(value), float(value) ** 2] if counted else [0.0, 0.0], tf.float64)

    sums = strategy.reduce(tf.distribute.ReduceOp.SUM,
                           strategy.experimental_distribute_values_from_function(first_local_replica_only), axis=None)
    total, squares = sums.numpy()
    if layout.num_pipelines * squares != total ** 2:
        raise ValueError(f"The workers disagree on the {name} (this worker: {value}, mean over workers: "
                         f"{total / layout.num_pipelines:g}). Each worker resumes from its own checkpoints "
                         f"(model_dir/workers/worker_i): restore the same cluster, or start a new --model_dir.")


def any_worker(strategy, layout, flag):
    """True on every worker when `flag` (a Python bool) is True on any of them; used so that all workers stop at
    the same step, e.g. when only one of them received SIGTERM."""
    if layout.num_pipelines == 1:
        return bool(flag)
    value = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(1.0 if flag else 0.0))
    return bool(strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None).numpy() > 0)

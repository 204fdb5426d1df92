"""Where training runs: the `--strategy` choices, and how the hosts' batches reach their replicas.

The input is one plain `iter(dataset)` per host, the machine its replicas live on (`input_hosts`: one for a local
MirroredStrategy, one per worker process under MultiWorkerMirroredStrategy, one per TPU host of a pod under
TPUStrategy, where one process drives them all), and each replica takes its slice of its own host's batch
through `strategy.experimental_distribute_values_from_function`. `tf.train.Checkpoint` cannot save the iterator
of `strategy.experimental_distribute_dataset` (tensorflow#56372); plain iterators it can, so a resumed run reads
on from the exact record where the checkpoint was taken.
"""

import contextlib
import dataclasses

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.errors import InputError
from bert_tf.training.device_check import GPU_INSTALL, found_devices, no_tpu_error
from bert_tf.training.input_hosts import strategy_hosts
from bert_tf.training.strategy_names import STRATEGIES

# The name scope of the ops cutting a host's batch into its replicas' slices (the tests find them by it).
SLICE_SCOPE = "replica_slice"


def create_strategy(name, tpu=None, all_reduce_implementation=None):
    """The `tf.distribute.Strategy` for a `--strategy` value.

    tpu: `TPUStrategy` on the TPU named by `tpu` (a name, grpc:// address or "local"), initialised here; no TPU
        to be found is a `WrongDeviceError` naming what was found and the install command.
    mirrored: `MirroredStrategy` over all local GPUs (the CPU, with a warning, when there is none).
    multi_worker: `MultiWorkerMirroredStrategy`; the cluster comes from the TF_CONFIG environment variable. Its
        all-reduce goes over NCCL when this machine has GPUs, else TensorFlow's choice ("auto": gRPC rings);
        `all_reduce_implementation` ("auto", "ring", "nccl") picks instead. TensorFlow's default asks for no
        NCCL, and its "auto" does not choose NCCL on its own.
    one_device: `OneDeviceStrategy` on the first GPU, else the CPU.
    default: the default strategy (no distribution; the device TensorFlow picks).

    Example:
    >>> strategy = create_strategy("one_device")
    >>> strategy.num_replicas_in_sync
    1
    """
    if all_reduce_implementation is not None and name != "multi_worker":
        raise InputError(f"--all_reduce_implementation={all_reduce_implementation} is only used with "
                         f"--strategy=multi_worker (got --strategy={name}): leave it out.")
    if name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (ValueError, tf.errors.OpError) as e:
            raise no_tpu_error(tpu, e) from None
        return tf.distribute.TPUStrategy(resolver)
    if tpu:
        raise InputError(f"--tpu={tpu!r} is only used with --strategy=tpu (got --strategy={name}).")
    if name == "mirrored":
        if not tf.config.list_logical_devices("GPU"):
            logging.warning("--strategy=mirrored found no GPU: training on the CPU (%s). On a GPU machine install "
                            "%s.", found_devices(), GPU_INSTALL)
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        implementation = all_reduce_implementation or default_all_reduce_implementation(
            len(tf.config.list_physical_devices("GPU")))
        logging.info("MultiWorkerMirroredStrategy all-reduce: %s.", implementation)
        communication = getattr(tf.distribute.experimental.CommunicationImplementation, implementation.upper())
        return tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(implementation=communication))
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "default":
        return tf.distribute.get_strategy()
    raise InputError(f"--strategy={name!r} is unknown: use one of {', '.join(STRATEGIES)}.")


def default_all_reduce_implementation(num_gpus):
    """The multi-worker all-reduce for a machine with `num_gpus` GPUs: "nccl" with GPUs (as Model Garden asks for
    it), else "auto".

    >>> default_all_reduce_implementation(8), default_all_reduce_implementation(0)
    ('nccl', 'auto')
    """
    return "nccl" if num_gpus else "auto"


@dataclasses.dataclass(frozen=True)
class WorkerLayout:
    """How the replicas are spread over worker processes and over the hosts that feed them.

    Every host holding replicas runs one input pipeline (see `input_hosts`): one host for a MirroredStrategy, one
    per worker process under MultiWorkerMirroredStrategy, one per TPU host under TPUStrategy on a pod (one process
    drives all of them).

    Attributes:
        num_replicas: replicas in sync over all workers.
        local_replicas: replicas of this worker process.
        num_workers: worker processes (each runs this program).
        worker_index: this process's index (0 is the chief).
        hosts: this worker's `InputHost`s; every worker has as many.

    Example:
    >>> from bert_tf.training.input_hosts import group_by_host
    >>> layout = WorkerLayout(8, 8, 1, 0, group_by_host(
    ...     [f"/job:worker/replica:0/task:{t}/device:TPU:{c}" for t in (0, 1) for c in range(4)]))
    >>> layout.num_input_pipelines, layout.host_batch_size(256)
    (2, 128)
    """

    num_replicas: int
    local_replicas: int
    num_workers: int
    worker_index: int
    hosts: tuple

    @property
    def is_chief(self):
        return self.worker_index == 0

    @property
    def num_input_pipelines(self):
        """Input pipelines over all workers: one per host."""
        return self.num_workers * len(self.hosts)

    def pipeline_id(self, host):
        """The index of `host`'s pipeline over all workers' hosts."""
        return self.worker_index * len(self.hosts) + host.index

    def input_context(self, host):
        """The `tf.distribute.InputContext` of `host`'s pipeline (which share of the records it reads)."""
        return tf.distribute.InputContext(num_input_pipelines=self.num_input_pipelines,
                                          input_pipeline_id=self.pipeline_id(host),
                                          num_replicas_in_sync=self.num_replicas)

    def host_batch_size(self, global_batch_size):
        """The batch each host's pipeline yields; the global batch must split evenly over all replicas."""
        if global_batch_size % self.num_replicas:
            raise InputError(
                f"train_batch_size={global_batch_size} does not split evenly over {self.num_replicas} replicas: "
                f"use a multiple of {self.num_replicas}.")
        return global_batch_size // self.num_input_pipelines

    def describe_input(self):
        """One line: how many input pipelines there are and where this worker's pipelines run."""
        first = self.worker_index * self.local_replicas
        where = "; ".join(f"pipeline {self.pipeline_id(host)} on {host.device} "
                          f"(replica(s) {_ranges([first + r for r in host.replicas])})" for host in self.hosts)
        return (f"Input: {self.num_input_pipelines} pipeline(s), one per host, over {self.num_workers} worker "
                f"process(es); this worker's: {where}.")


def _ranges(indices):
    """"0-3" for consecutive indices, else "0,2,4,6"."""
    if len(indices) > 1 and indices[-1] - indices[0] == len(indices) - 1:
        return f"{indices[0]}-{indices[-1]}"
    return ",".join(map(str, indices))


def worker_layout(strategy):
    """This process's `WorkerLayout`, read from the replica ids the strategy gives its local replicas and from the
    devices they run on."""
    ids = strategy.experimental_local_results(
        strategy.experimental_distribute_values_from_function(lambda ctx: ctx.replica_id_in_sync_group))
    local = len(ids)
    num_replicas = strategy.num_replicas_in_sync
    layout = WorkerLayout(num_replicas=num_replicas, local_replicas=local, num_workers=num_replicas // local,
                          worker_index=int(min(ids)) // local, hosts=strategy_hosts(strategy))
    logging.info("Strategy %s: %d replica(s), %d on this worker (%d of %d), on %d host(s).",
                 type(strategy).__name__, num_replicas, local, layout.worker_index, layout.num_workers,
                 len(layout.hosts))
    return layout


def split_per_replica(strategy, layout, host_batches):
    """Per-replica values for `strategy.run`: each replica takes its slice of its own host's batch.

    Args:
        host_batches: one batch (a dict of [host_batch, ...] tensors) per host of `layout.hosts`, in that order.

    Example:
    >>> strategy = tf.distribute.get_strategy()
    >>> values = split_per_replica(strategy, worker_layout(strategy), ({"input_word_ids": tf.zeros([4, 8])},))
    >>> strategy.experimental_local_results(values)[0]["input_word_ids"].shape
    TensorShape([4, 8])
    """
    if len(host_batches) != len(layout.hosts):
        raise ValueError(f"Got {len(host_batches)} batch(es) for {len(layout.hosts)} input host(s): pass one "
                         f"batch per host.")
    position = {}
    for host, batch in zip(layout.hosts, host_batches):
        for slot, replica in enumerate(host.replicas):
            position[replica] = (batch, slot, len(host.replicas), host.device)
    return _distribute(strategy, layout, position)


def split_over_local_replicas(strategy, layout, batch):
    """Per-replica values for `strategy.run`: one batch of this worker split over all of its replicas, whichever
    host they are on (evaluation reads its input in the worker process).

    Example:
    >>> strategy = tf.distribute.get_strategy()
    >>> values = split_over_local_replicas(strategy, worker_layout(strategy), {"input_word_ids": tf.zeros([4, 8])})
    >>> strategy.experimental_local_results(values)[0]["input_word_ids"].shape
    TensorShape([4, 8])
    """
    return _distribute(strategy, layout, {r: (batch, r, layout.local_replicas, None)
                                          for r in range(layout.local_replicas)})


def _distribute(strategy, layout, position):
    def replica_slice(ctx):
        batch, slot, parts, device = position[ctx.replica_id_in_sync_group % layout.local_replicas]
        if parts == 1:
            return batch
        # Cut where the batch is: neither TensorFlow's strategies nor the placer put the slice there, and on a pod
        # it would run on the client's task, each host's whole batch crossing the network to it and back.
        # (An evaluation batch is read by this process: cut where it is.)
        with tf.device(device) if device else contextlib.nullcontext(), tf.name_scope(SLICE_SCOPE):
            return {name: _slice(value, slot, parts) for name, value in batch.items()}

    return strategy.experimental_distribute_values_from_function(replica_slice)


def _slice(value, index, parts):
    size = value.shape[0] // parts
    return value[index * size:(index + 1) * size]


def sum_over_workers(strategy, layout, values):
    """The element-wise sum over worker processes of `values` (a list of floats each worker gives once), as a
    float64 numpy array every worker receives: one small all-reduce. With one worker, `values` as they are.

    >>> sum_over_workers(tf.distribute.get_strategy(), worker_layout(tf.distribute.get_strategy()), [1.0, 2.5])
    array([1. , 2.5])
    """
    if layout.num_workers == 1:
        return np.asarray(values, np.float64)

    # Only the first replica of each worker contributes, so a worker counts once whatever its replica count.
    def first_local_replica_only(ctx):
        counted = ctx.replica_id_in_sync_group % layout.local_replicas == 0
        return tf.constant(values if counted else [0.0] * len(values), tf.float64)

    return strategy.reduce(tf.distribute.ReduceOp.SUM,
                           strategy.experimental_distribute_values_from_function(first_local_replica_only),
                           axis=None).numpy()


def gather_over_workers(strategy, layout, values):
    """Every worker's `values` (a list of numbers, of any length), as a list indexed by worker, on every worker:
    two small all-reduces (the lengths, then the values, each worker's in its own slots of a zero vector). With
    one worker, `[values]`.

    >>> gather_over_workers(tf.distribute.get_strategy(), worker_layout(tf.distribute.get_strategy()), [4, 8])
    [[4.0, 8.0]]
    """
    if layout.num_workers == 1:
        return [[float(v) for v in values]]
    workers = range(layout.num_workers)
    own = [float(w == layout.worker_index) for w in workers]
    lengths = [int(n) for n in sum_over_workers(strategy, layout, [len(values) * x for x in own])]
    longest = max(lengths)
    if not longest:
        return [[] for _ in workers]
    padded = [float(v) for v in values] + [0.0] * (longest - len(values))
    slots = sum_over_workers(strategy, layout, [v * x for x in own for v in padded])
    return [slots[w * longest:w * longest + lengths[w]].tolist() for w in workers]

"""The machines that feed the replicas: one input pipeline per host, its iterator placed on that host's CPU.

A host is a machine holding replicas: a task of a job in TensorFlow's device names
(`/job:worker/replica:0/task:1/device:TPU:3` lives on task 1). A plain MirroredStrategy has one host (this
machine); under MultiWorkerMirroredStrategy each worker process has one (its machine); a TPU pod is driven by one
Python process whose replicas live on several hosts. Reading the whole global batch on one of them and sending
every replica its slice over the network each step is what one pipeline per host avoids.

Each host's iterator is a plain `iter(dataset)` created on that host's CPU, so `tf.train.Checkpoint` saves it and
a resumed run reads on from the exact record (the iterator of `strategy.experimental_distribute_dataset` is not
a trackable object and cannot be saved; see docs/accelerators.md).
"""

import dataclasses

import tensorflow as tf

from bert_tf.compat.tensorflow_internals import Trackable, copy_iterator_to_cpu, iterator_state, restore_iterator_state
from bert_tf.errors import InputError


@dataclasses.dataclass(frozen=True)
class InputHost:
    """One host of this worker process and the local replicas it holds.

    Attributes:
        index: the host's position among this worker's hosts.
        device: the host's CPU, where its input pipeline and iterator run.
        replicas: the indices, among this worker's replicas, of the replicas on this host (in replica order).

    Example:
    >>> InputHost(0, "/job:localhost/replica:0/task:0/device:CPU:0", (0, 1)).replicas
    (0, 1)
    """

    index: int
    device: str
    replicas: tuple


def group_by_host(replica_devices):
    """The `InputHost`s of a worker whose local replicas run on `replica_devices` (in replica order): the devices
    grouped by job, replica and task, in order of first appearance.

    Example:
    >>> hosts = group_by_host([f"/job:worker/replica:0/task:{t}/device:TPU:{c}" for t in (0, 1) for c in range(4)])
    >>> [(h.device, h.replicas) for h in hosts]
    [('/job:worker/replica:0/task:0/device:CPU:0', (0, 1, 2, 3)),
     ('/job:worker/replica:0/task:1/device:CPU:0', (4, 5, 6, 7))]
    """
    replicas_of = {}
    for index, name in enumerate(replica_devices):
        spec = tf.DeviceSpec.from_string(name)
        cpu = tf.DeviceSpec(job=spec.job or "localhost", replica=spec.replica or 0, task=spec.task or 0,
                            device_type="CPU", device_index=0).to_string()
        replicas_of.setdefault(cpu, []).append(index)
    hosts = tuple(InputHost(i, cpu, tuple(replicas)) for i, (cpu, replicas) in enumerate(replicas_of.items()))
    sizes = {len(host.replicas) for host in hosts}
    if len(sizes) > 1:
        raise InputError(f"The replicas are spread unevenly over hosts ({[len(h.replicas) for h in hosts]} on "
                         f"{[h.device for h in hosts]}): each host reads an equal share of the batch, so give "
                         f"every host the same number of devices.")
    return hosts


def strategy_hosts(strategy):
    """The `InputHost`s of this worker's replicas under `strategy` (one host for the default strategy)."""
    try:
        devices = strategy.extended.worker_devices
    except RuntimeError:  # the default strategy has no device list: it runs on this machine
        devices = ("/job:localhost/replica:0/task:0/device:CPU:0",)
    return group_by_host(devices)


class HostIterator(Trackable):
    """A host's input iterator as a checkpoint saves it: its state is serialized and restored on the host's CPU.

    `tf.data.Iterator` asks its dataset for options on the default device when it is saved, which fails when the
    dataset lives on another task; here that happens on the host. The checkpoint key is the plain iterator's
    (`<name>/.ATTRIBUTES/ITERATOR_STATE`), so checkpoints of either restore into the other.

    Example:
    >>> iterator = iter(tf.data.Dataset.range(3))
    >>> checkpoint = tf.train.Checkpoint(iterator=HostIterator(iterator, "/cpu:0"))
    """

    _STATE = "ITERATOR_STATE"  # the key `tf.data.Iterator` saves under

    def __init__(self, iterator, device):
        self.iterator = iterator
        self.device = device

    def _serialize_to_tensors(self):
        with tf.device(self.device):
            return {self._STATE: iterator_state(self.iterator)}

    def _restore_from_tensors(self, restored_tensors):
        with tf.device(self.device):
            return restore_iterator_state(self.iterator, restored_tensors[self._STATE])

    def _copy_trackable_to_cpu(self, object_map):
        # An asynchronous checkpoint writes copies taken when `save` is called; without one, the writing thread
        # would serialize this iterator later, wherever training has moved it by then. The copy is an iterator of
        # the same dataset on the same host, with this one's state.
        with tf.device(self.device):
            copy = copy_iterator_to_cpu(self.iterator, object_map)
        if self not in object_map:
            object_map[self] = HostIterator(copy, self.device)


def host_iterators(hosts, make_dataset):
    """One iterator per host, each created (with its dataset) on the host's CPU.

    Args:
        hosts: this worker's `InputHost`s.
        make_dataset: a callable `host -> tf.data.Dataset` building that host's pipeline.

    Returns:
        A tuple of plain iterators, in the order of `hosts`.

    Example:
    >>> hosts = group_by_host(["/job:localhost/replica:0/task:0/device:CPU:0"])
    >>> iterators = host_iterators(hosts, lambda host: tf.data.Dataset.range(3))
    >>> int(next(iterators[0]))
    0
    """
    iterators = []
    # Remote iterators are made asynchronously: the scope's exit waits for them, so that the first step never
    # reads an iterator its task has not made yet.
    with tf.experimental.async_scope():
        for host in hosts:
            with tf.device(host.device):
                iterators.append(iter(make_dataset(host)))
    return tuple(iterators)

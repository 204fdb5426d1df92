"""One input pipeline per host: hosts found from the replicas' devices, each host's share of the records, and the
checkpoint keys of the hosts' iterators. The run on a client driving two server hosts (a TPU pod's structure) is
tests/test_distributed_training.py::test_one_client_two_hosts_one_pipeline_per_host."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.checkpointing import iterator_keys
from bert_tf.training.input_hosts import HostIterator, group_by_host, host_iterators, strategy_hosts
from bert_tf.training.strategy import WorkerLayout

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def hosts_of(devices):
    return [(host.device, host.replicas) for host in group_by_host(devices)]


def test_one_machine_is_one_host():
    assert hosts_of(["/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"]) \
        == [("/job:localhost/replica:0/task:0/device:CPU:0", (0, 1))]
    # A device name without a job (a strategy's local GPUs) is this machine too.
    assert hosts_of(["/device:GPU:0", "/device:GPU:1"]) == [("/job:localhost/replica:0/task:0/device:CPU:0", (0, 1))]
    assert [h.device for h in strategy_hosts(tf.distribute.get_strategy())] == \
        ["/job:localhost/replica:0/task:0/device:CPU:0"]


def test_two_tasks_are_two_hosts():
    assert hosts_of(["/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"]) == [
        ("/job:worker/replica:0/task:0/device:CPU:0", (0,)), ("/job:worker/replica:0/task:1/device:CPU:0", (1,))]


def test_a_tpu_pod_is_one_host_per_task():
    # 8 TPU cores on 2 hosts, in a device order that alternates between them (the replica order of a device
    # assignment need not follow the hosts): each replica still belongs to its own task's host.
    cores = [f"/job:worker/replica:0/task:{t}/device:TPU:{c}" for c in range(4) for t in (0, 1)]
    assert hosts_of(cores) == [("/job:worker/replica:0/task:0/device:CPU:0", (0, 2, 4, 6)),
                               ("/job:worker/replica:0/task:1/device:CPU:0", (1, 3, 5, 7))]
    layout = WorkerLayout(8, 8, 1, 0, group_by_host(cores))
    contexts = [layout.input_context(host) for host in layout.hosts]
    assert [(c.num_input_pipelines, c.input_pipeline_id) for c in contexts] == [(2, 0), (2, 1)]
    assert layout.host_batch_size(256) == 128
    assert layout.describe_input() == (
        "Input: 2 pipeline(s), one per host, over 1 worker process(es); this worker's: "
        "pipeline 0 on /job:worker/replica:0/task:0/device:CPU:0 (replica(s) 0,2,4,6); "
        "pipeline 1 on /job:worker/replica:0/task:1/device:CPU:0 (replica(s) 1,3,5,7).")


def test_pipeline_ids_count_the_hosts_of_every_worker():
    # Worker 1 of 2, each driving 2 hosts of 2 replicas: its hosts read shares 2 and 3 of 4.
    hosts = group_by_host([f"/job:worker/replica:0/task:{t}/device:TPU:{c}" for t in (2, 3) for c in range(2)])
    layout = WorkerLayout(8, 4, 2, 1, hosts)
    assert [layout.input_context(h).input_pipeline_id for h in hosts] == [2, 3]
    assert layout.num_input_pipelines == 4 and layout.host_batch_size(256) == 64
    with pytest.raises(ValueError, match=r"train_batch_size=12 does not split evenly over 8 replicas"):
        layout.host_batch_size(12)


def test_uneven_hosts_are_refused():
    with pytest.raises(ValueError, match=r"spread unevenly over hosts \(\[2, 1\]"):
        group_by_host(["/job:worker/task:0/device:TPU:0", "/job:worker/task:0/device:TPU:1",
                       "/job:worker/task:1/device:TPU:0"])


def test_each_host_iterator_is_made_on_its_host():
    hosts = group_by_host(["/job:localhost/replica:0/task:0/device:CPU:0"])
    iterators = host_iterators(hosts, lambda host: tf.data.Dataset.range(4).batch(2))
    assert iterators[0]._iterator_resource.device == hosts[0].device
    assert next(iterators[0]).numpy().tolist() == [0, 1]


def test_host_iterator_checkpoints_restore_into_plain_iterators_and_back(tmp_path):
    """Runs saved before hosts existed hold a plain `iterator`: they resume into a host's iterator, and back."""
    dataset = tf.data.Dataset.range(10)
    plain = iter(dataset)
    next(plain), next(plain)
    path = tf.train.Checkpoint(iterator=plain).save(str(tmp_path / "plain" / "ckpt"))
    hosts = group_by_host(["/job:localhost/replica:0/task:0/device:CPU:0"])
    resumed = iter(dataset)
    tf.train.Checkpoint(**iterator_keys([resumed], hosts)).restore(path).assert_existing_objects_matched()
    assert int(next(resumed)) == 2
    path = tf.train.Checkpoint(**iterator_keys([resumed], hosts)).save(str(tmp_path / "host" / "ckpt"))
    assert [name for name, _ in tf.train.list_variables(path) if name.startswith("iterator")] == \
        ["iterator/.ATTRIBUTES/ITERATOR_STATE"]
    back = iter(dataset)
    tf.train.Checkpoint(iterator=back).restore(path).expect_partial().assert_existing_objects_matched()
    assert int(next(back)) == 3


def test_several_hosts_save_one_iterator_each():
    hosts = group_by_host(["/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"])
    iterators = [iter(tf.data.Dataset.range(10)) for _ in hosts]
    keys = iterator_keys(iterators, hosts)
    assert sorted(keys) == ["iterator_host_0", "iterator_host_1"]
    assert all(isinstance(value, HostIterator) for value in keys.values())
    with pytest.raises(ValueError, match=r"Got 1 iterator\(s\) for 2 input host\(s\)"):
        iterator_keys(iterators[:1], hosts)


def test_the_hosts_read_disjoint_shares_of_the_records(tmp_path):
    """What the hosts' InputContexts give the real pipeline: with 4 files and 2 hosts, two files each."""
    from bert_tf.inputs.input_spec import InputSpec
    from bert_tf.inputs.pretraining_dataset import pretraining_dataset
    from pretraining_records import write_records

    files = [write_records(tmp_path / f"part-{i}.tfrecord", 8, 16, 4, seed=i) for i in range(4)]
    hosts = group_by_host(["/job:w/replica:0/task:0/device:CPU:0", "/job:w/replica:0/task:1/device:CPU:0"])
    layout = WorkerLayout(2, 2, 1, 0, hosts)
    seen = []
    for host in hosts:
        dataset = pretraining_dataset(InputSpec(files, 16, 4, 8, is_training=False),
                                      input_context=layout.input_context(host))
        seen.append({tuple(row) for batch in dataset for row in batch["input_word_ids"].numpy()})
    everything = {tuple(row) for batch in pretraining_dataset(InputSpec(files, 16, 4, 8, is_training=False))
                  for row in batch["input_word_ids"].numpy()}
    assert len(seen[0]) == len(seen[1]) == 16 and not seen[0] & seen[1]
    assert seen[0] | seen[1] == everything
    np.testing.assert_equal(len(everything), 32)


def test_fewer_files_than_hosts_is_warned_about(tmp_path, caplog):
    from bert_tf.inputs.input_spec import InputSpec
    from bert_tf.inputs.pretraining_dataset import pretraining_dataset
    from pretraining_records import write_records

    path = write_records(tmp_path / "one.tfrecord", 8, 16, 4)
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    pretraining_dataset(InputSpec(path, 16, 4, 2, is_training=False), input_context=context)
    assert "1 input file(s) for 2 input pipelines: every pipeline reads all of them" in caplog.text
    caplog.clear()
    other = write_records(tmp_path / "two.tfrecord", 8, 16, 4, seed=1)
    pretraining_dataset(InputSpec([path, other], 16, 4, 2, is_training=False), input_context=context)
    assert "input pipelines" not in caplog.text

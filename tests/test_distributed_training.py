"""MirroredStrategy over two logical CPUs and MultiWorkerMirroredStrategy with two worker processes give the same
weights as one device with the same global batch (dropout 0; every record has all its predictions, so the
per-replica masked-LM loss of half a batch averages to the loss of the whole batch)."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf
import yaml

from bert_tf.model_dir import load_pretrainer
from bert_tf.training.pretraining import run_pretraining
from bert_tf.training.recipe import load_recipe
from bert_tf.training.training_log import read_history
from helpers import REPO, latest_step, run_cli, start_cli, tiny_model_section
from pretraining_records import write_records, write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

SEQ, PRED, STEPS = 16, 4, 12


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("distributed")
    train = write_records(root / "train.tfrecord", 128, SEQ, PRED, seed=0, full_predictions=True)
    recipe = {
        "name": "distributed_test",
        "model": tiny_model_section(max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                                    attention_probs_dropout_prob=0.0),
        "vocab_file": write_vocab(root / "vocab.txt"), "train_batch_size": 8, "num_train_steps": STEPS,
        "num_warmup_steps": 2, "learning_rate": 5e-3, "save_checkpoints_steps": STEPS, "iterations_per_loop": 4,
        # One record per shuffle buffer: the two workers' halves of a global batch are then exactly the records of
        # the one-device batch (worker i reads every 2nd record of the single file).
        "shuffle_buffer": 1, "max_micro_batch_size": 2,
        "phases": [{"name": "seq16", "num_steps": STEPS, "max_seq_length": SEQ, "max_predictions_per_seq": PRED,
                    "input_file": train}]}
    path = root / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return {"root": root, "recipe": str(path)}


@pytest.fixture(scope="module")
def reference(setup):
    """The model directory of the setup's recipe trained on one device, which the distributed runs must equal."""
    model_dir = str(setup["root"] / "one_device")
    run_pretraining(load_recipe(setup["recipe"]), model_dir, peak_tflops=1.0)
    return model_dir


# Trains `recipe` stopped at step 8 (its checkpoint cannot be written: a directory stands where its index file
# goes), then resumed from step 4's checkpoint in a new run, as a restarted job would. Source for the child scripts.
STOP_AT_8_AND_RESUME = """
import os
import tensorflow as tf
from bert_tf.training.pretraining import PretrainingRun

def stop_at_8_and_resume(recipe, model_dir, strategy):
    recipe = recipe.override({"save_checkpoints_steps": 4})
    os.makedirs(os.path.join(model_dir, "ckpt-8.index"))
    try:
        PretrainingRun(recipe, model_dir, strategy, peak_tflops=1.0).run()
    except Exception as e:
        print("STOPPED", os.path.basename(tf.train.latest_checkpoint(model_dir)), type(e).__name__)
    os.rmdir(os.path.join(model_dir, "ckpt-8.index"))
    run = PretrainingRun(recipe, model_dir, strategy, peak_tflops=1.0)
    print("RESUMED", run.run().step)
    return run
"""


def assert_stopped_and_resumed(stdout):
    lines = dict(line.split(" ", 1) for line in stdout.splitlines() if line.startswith(("STOPPED", "RESUMED")))
    assert lines["STOPPED"].startswith("ckpt-4 ") and lines["RESUMED"] == "12", lines


def assert_same_weights(model_dir, reference):
    expected = {v.path: v.numpy() for v in load_pretrainer(reference).trainable_variables}
    got = {v.path: v.numpy() for v in load_pretrainer(model_dir).trainable_variables}
    assert got.keys() == expected.keys()
    for path, value in expected.items():
        np.testing.assert_allclose(got[path], value, rtol=1e-5, atol=1e-5, err_msg=path)
    # The logged metrics too: losses, and the norm of the averaged gradient (catches a sum instead of a mean).
    expected_rows, rows = (read_history(os.path.join(d, "train_metrics.jsonl")) for d in (reference, model_dir))
    assert [r["step"] for r in rows] == [r["step"] for r in expected_rows] == [4, 8, 12]
    for row, expected_row in zip(rows, expected_rows):
        for name in ("loss", "masked_lm_loss", "next_sentence_accuracy", "grad_norm", "learning_rate"):
            np.testing.assert_allclose(row[name], expected_row[name], rtol=1e-5, err_msg=name)


@pytest.mark.large
def test_mirrored_two_logical_cpus_equals_one_device(setup, reference):
    model_dir = str(setup["root"] / "mirrored")
    script = textwrap.dedent(f"""
        import tensorflow as tf
        from absl import logging
        logging.set_verbosity(logging.INFO)
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from bert_tf.training.pretraining import run_pretraining
        from bert_tf.training.recipe import load_recipe
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        result = run_pretraining(load_recipe({setup['recipe']!r}), {model_dir!r}, strategy=strategy, peak_tflops=1.0)
        print("REPLICAS", strategy.num_replicas_in_sync, "STEP", result.step)
        exec({STOP_AT_8_AND_RESUME!r})
        stop_at_8_and_resume(load_recipe({setup['recipe']!r}), {model_dir + '_resumed'!r}, strategy)
        # The options on two replicas: float16 with dynamic loss scaling (a merge_call path), XLA, LAMB.
        options = load_recipe({setup['recipe']!r}).override(dict(
            num_train_steps=4, mixed_precision="mixed_float16", jit_compile=True, **{{"optimizer.name": "lamb"}}))
        result = run_pretraining(options, {model_dir + '_options'!r}, strategy=strategy, peak_tflops=1.0)
        print("OPTIONS", result.step, result.last_metrics["loss"], result.last_metrics["grad_norm"])
        # An eval batch that does not split over the two replicas stops the run before its first step.
        import os
        from bert_tf.errors import InputError
        recipe = load_recipe({setup['recipe']!r})
        try:
            run_pretraining(recipe.override({{"eval.input_file": recipe.phases[0].input_file,
                                               "eval.eval_batch_size": 3}}), {model_dir + '_eval'!r},
                            strategy=strategy, peak_tflops=1.0)
        except InputError as e:
            print("EVAL_BATCH", os.path.exists({model_dir + '_eval'!r}), e)

        # Probe: with a huge epsilon the update is linear in the gradient, so a second cross-replica sum shows.
        import keras
        from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay
        for aggregate in (False, True):
            with strategy.scope():
                probe = keras.Variable(tf.zeros([3]), name="probe")
                optimizer = AdamWeightDecay(learning_rate=1.0, weight_decay_rate=0.0, epsilon=1e3,
                                            aggregate_gradients=aggregate)
                optimizer.build([probe])
            strategy.run(tf.function(lambda: optimizer.apply([tf.ones([3])], [probe])))
            print("PROBE", aggregate, float(probe.numpy()[0]))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "REPLICAS 2 STEP 12" in done.stdout
    options = next(line.split() for line in done.stdout.splitlines() if line.startswith("OPTIONS"))
    assert options[1] == "4" and all(np.isfinite(float(x)) for x in options[2:])
    assert ("EVAL_BATCH False eval_batch_size=3 does not split over the 2 replicas this process drives: use a "
            "multiple of 2, e.g. --set=eval.eval_batch_size=4.") in done.stdout
    # The optimizer of the loop applies the already-averaged gradient (1.0) as is; Keras' default sums it again.
    probes = dict(line.split()[1:] for line in done.stdout.splitlines() if line.startswith("PROBE"))
    np.testing.assert_allclose(float(probes["False"]), -0.1 / (0.001 ** 0.5 + 1e3), rtol=1e-5)
    np.testing.assert_allclose(float(probes["True"]), -0.2 / (0.004 ** 0.5 + 1e3), rtol=1e-5)
    # 8 sequences = 2 replicas x 2 micro-batches x 2 sequences.
    assert "global batch 8 = 2 replica(s) x 2 micro-batch(es) x 2 sequences" in done.stderr
    # Two replicas on one machine: one host, one pipeline.
    assert ("Input: 1 pipeline(s), one per host, over 1 worker process(es); this worker's: pipeline 0 on "
            "/job:localhost/replica:0/task:0/device:CPU:0 (replica(s) 0-1).") in done.stderr
    assert_same_weights(model_dir, reference)
    assert_stopped_and_resumed(done.stdout)
    assert_same_weights(model_dir + "_resumed", reference)


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def start_workers(recipe, model_dir, log_dir, *extra):
    """Two `bert-pretrain --strategy=multi_worker` processes on 127.0.0.1, their stderr in log_dir/worker_i.log."""
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    workers = []
    for index in range(2):
        env = {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
               "TF_CPP_MIN_LOG_LEVEL": "2"}
        with open(os.path.join(log_dir, f"worker_{index}.log"), "w") as log:
            workers.append(start_cli("pretrain", f"--config={recipe}", f"--model_dir={model_dir}",
                                     "--strategy=multi_worker", "--peak_tflops=1", *extra, env=env, output=log))
    return workers


def wait_for(workers, log_dir, timeout=300):
    """Waits for both workers to exit (killing them after `timeout` s); returns their output."""
    try:
        for worker in workers:
            worker.wait(timeout=timeout)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    return [open(os.path.join(log_dir, f"worker_{index}.log")).read() for index in range(len(workers))]


@pytest.mark.large
def test_multi_worker_two_processes_equals_one_device(setup, tmp_path, reference):
    """Two worker processes train to the one-device weights. The chief alone saves the model and optimizer (a save
    by one worker does not hang the other); worker 1 saves its own iterator and RNG. A restart after worker 1 died
    while saving step 12 resumes both from step 8, the newest step both have (it refused: the workers' latest
    differed), and ends with the same weights. A resume in one process (one input pipeline instead of two) stops
    with one line, unless the input restarts."""
    model_dir = str(setup["root"] / "multi_worker")
    workers = start_workers(setup["recipe"], model_dir, tmp_path, "--save_checkpoints_steps=4")
    stderrs = wait_for(workers, tmp_path, timeout=240)
    for worker, stderr in zip(workers, stderrs):
        assert worker.returncode == 0, stderr[-3000:]
    assert ("Input: 2 pipeline(s), one per host, over 2 worker process(es); this worker's: pipeline 1 on "
            "/job:worker/replica:0/task:1/device:CPU:0 (replica(s) 1)") in stderrs[1]
    assert_same_weights(model_dir, reference)
    # Each worker keeps its own checkpoints (its own input iterator); the model and optimizer only the chief.
    worker_dir = os.path.join(model_dir, "workers", "worker_1")
    keys = [{name.split("/")[0] for name, _ in tf.train.list_variables(os.path.join(d, "ckpt-12"))}
            for d in (model_dir, worker_dir)]
    assert {"model", "optimizer", "iterator", "phase", "input_pipelines"} <= keys[0]
    assert {"iterator", "step", "phase", "input_pipelines"} <= keys[1]  # (no dropout here: no RNG state)
    assert not keys[1] & {"model", "optimizer"}

    # Worker 1 died while writing step 12: its files of step 12 are missing and its state file names step 8.
    for name in os.listdir(worker_dir):
        if name.startswith("ckpt-12."):
            os.remove(os.path.join(worker_dir, name))
    tf.compat.v1.train.update_checkpoint_state(worker_dir, os.path.join(worker_dir, "ckpt-8"),
                                               [os.path.join(worker_dir, f"ckpt-{s}") for s in (4, 8)])
    log_dir = tmp_path / "restarted"
    log_dir.mkdir()
    restarted = wait_for(start_workers(setup["recipe"], model_dir, log_dir, "--save_checkpoints_steps=4"), log_dir)
    assert "Resuming from step 8, the newest every worker has" in restarted[0], restarted[0][-3000:]
    assert all("(step 8)" in stderr and "step 12/12" in stderr for stderr in restarted), restarted[1][-3000:]
    assert_same_weights(model_dir, reference)

    # One process resumes a two-pipeline checkpoint: refused in one line, or the phase's input restarts.
    args = (f"--config={setup['recipe']}", f"--model_dir={model_dir}", "--num_train_steps=16", "--peak_tflops=1")
    refused = run_cli("pretrain", *args)
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert ("ckpt-12 was written with 2 input pipeline(s) (one per input host) and this run has 1: their positions "
            "in the input do not carry over; resume on the same number of hosts, or pass "
            "--set=restart_input_on_resize=true") in refused.stderr.strip().splitlines()[-1]
    resumed = run_cli("pretrain", *args, "--set=restart_input_on_resize=true")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "the input of phase 0 starts again from its first records" in resumed.stderr
    assert latest_step(model_dir) == 16


# A TPU pod's structure on CPU: one client process drives replicas on two server tasks (two "hosts"). Eager
# MirroredStrategy refuses a device list spanning tasks, so it is made inside a graph context; it then runs eagerly
# (tf.function + strategy.run) like any other strategy, with the cross-task all-reduce in-graph multi-worker
# MirroredStrategy supports (ReductionToOneDevice).
TWO_HOST_CLIENT = """
import json, os, sys
import tensorflow as tf
from absl import logging
logging.set_verbosity(logging.INFO)
from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import pretraining_dataset
from bert_tf.training.input_hosts import host_iterators
from bert_tf.training.recipe import load_recipe
from bert_tf.training.strategy import worker_layout

cluster, recipe_path, model_dir, train = json.loads(sys.argv[1])
tf.config.experimental_connect_to_cluster(tf.train.ClusterSpec(cluster))
devices = [f"/job:worker/replica:0/task:{task}/device:CPU:0" for task in (0, 1)]
with tf.Graph().as_default():
    strategy = tf.distribute.MirroredStrategy(devices, cross_device_ops=tf.distribute.ReductionToOneDevice())
run = stop_at_8_and_resume(load_recipe(recipe_path), model_dir, strategy)

layout = worker_layout(strategy)
iterators = host_iterators(layout.hosts, lambda host: pretraining_dataset(
    InputSpec(train, 16, 4, layout.host_batch_size(8), shuffle_buffer=1, seed=0),
    input_context=layout.input_context(host)))
print("ITERATORS", json.dumps([iterator._iterator_resource.device for iterator in iterators]))
loop = run.parts.trainer.train_loop.get_concrete_function(iterators, tf.constant(1))
print("LOOP_INPUTS", json.dumps([tensor.op.name for tensor in loop.inputs[:len(iterators)]]))
print("GET_NEXT", json.dumps(sorted([s.decode() for s in node.attr["_class"].list.s]
                                    for function in loop.graph.as_graph_def().library.function
                                    for node in function.node_def if node.op == "IteratorGetNext")))
print("FIRST_BATCHES", json.dumps([next(iterator)["input_word_ids"].numpy().tolist() for iterator in iterators]))

# Dynamic masking on the hosts: the masked pipelines resume exactly from their iterators' checkpoint too.
from bert_tf.inputs.dynamic_masking import DynamicMasker
from bert_tf.training.checkpointing import iterator_keys
masker = DynamicMasker(load_recipe(recipe_path).vocab_file, 0.15, True)
masked = host_iterators(layout.hosts, lambda host: pretraining_dataset(
    InputSpec(train, 16, 4, 4, seed=1, masker=masker), input_context=layout.input_context(host)))
checkpoint = tf.train.Checkpoint(**iterator_keys(masked, layout.hosts))
path = checkpoint.save(os.path.join(model_dir, "masked", "ckpt"))
after = [next(iterator)["masked_lm_positions"].numpy().tolist() for iterator in masked]
with tf.experimental.async_scope():
    checkpoint.restore(path)
print("MASKED", json.dumps([after, [next(iterator)["masked_lm_positions"].numpy().tolist() for iterator in masked]]))

# Two replicas per host, as on a pod: each host's batch is cut into its replicas' slices on that host.
from bert_tf.training.strategy import SLICE_SCOPE, split_per_replica
with tf.Graph().as_default():
    pod = tf.distribute.MirroredStrategy([f"/job:worker/replica:0/task:{t}/device:CPU:{c}" for t in (0, 1)
                                          for c in (0, 1)], cross_device_ops=tf.distribute.ReductionToOneDevice())
pod_layout = worker_layout(pod)
split = tf.function(lambda batches: pod.run(lambda features: features["input_word_ids"],
                                            args=(split_per_replica(pod, pod_layout, batches),)))
batches = tuple(next(iterator) for iterator in iterators)
graph = split.get_concrete_function(batches).graph.as_graph_def()
print("SLICES", json.dumps(sorted({node.device for node in graph.node if node.name.startswith(SLICE_SCOPE)})))
print("SLICE_ROWS", json.dumps([[batch["input_word_ids"].numpy().tolist() for batch in batches],
                                [replica.numpy().tolist() for replica in pod.experimental_local_results(
                                    split(batches))]]))
"""

SERVER = """
import json, sys
import tensorflow as tf
cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
# Two CPUs per task: a pod's host holds several replicas.
tf.distribute.Server(cluster, job_name="worker", task_index=int(sys.argv[2]),
                     config=tf.compat.v1.ConfigProto(device_count={"CPU": 2})).join()
"""


@pytest.mark.large
def test_one_client_two_hosts_one_pipeline_per_host(setup, reference):
    """Each host's iterator lives on its host's CPU and reads its own share of the records, and its batch is cut
    into its replicas' slices there; the run trains to the one-device weights, and a stop and resume from the
    checkpoint (every host's iterator in it) changes nothing."""
    import tensorflow as tf

    from bert_tf.inputs.input_spec import InputSpec
    from bert_tf.inputs.pretraining_dataset import pretraining_dataset

    model_dir = str(setup["root"] / "two_hosts")
    train = load_recipe(setup["recipe"]).phases[0].input_file
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    servers = [subprocess.Popen([sys.executable, "-c", SERVER, json.dumps(cluster), str(task)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for task in (0, 1)]
    try:
        done = subprocess.run([sys.executable, "-c", STOP_AT_8_AND_RESUME + TWO_HOST_CLIENT,
                               json.dumps([cluster, setup["recipe"], model_dir, train])],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    finally:
        for server in servers:
            server.kill()
            server.wait()
    assert done.returncode == 0, done.stderr[-3000:]
    out = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines() if " " in line}
    assert_stopped_and_resumed(done.stdout)
    assert ("Input: 2 pipeline(s), one per host, over 1 worker process(es); this worker's: "
            "pipeline 0 on /job:worker/replica:0/task:0/device:CPU:0 (replica(s) 0); "
            "pipeline 1 on /job:worker/replica:0/task:1/device:CPU:0 (replica(s) 1)") in done.stderr
    hosts = [f"/job:worker/replica:0/task:{task}/device:CPU:0" for task in (0, 1)]
    assert json.loads(out["ITERATORS"]) == hosts
    # Each step's IteratorGetNext is colocated with one host's iterator argument, so it runs on that host.
    assert json.loads(out["GET_NEXT"]) == [["loc:@iterators"], ["loc:@iterators_1"]]
    assert json.loads(out["LOOP_INPUTS"]) == ["iterators", "iterators_1"]
    # Host i reads every 2nd record from the i-th (one file, fewer files than hosts): together the hosts' batches
    # are the one-pipeline batch, without a record read twice.
    first = json.loads(out["FIRST_BATCHES"])
    whole = next(iter(pretraining_dataset(InputSpec(train, SEQ, PRED, 8, shuffle_buffer=1, seed=0))))["input_word_ids"]
    assert len(first) == 2 and all(len(batch) == 4 for batch in first)
    np.testing.assert_array_equal(np.array(first[0]), whole.numpy()[0::2])
    np.testing.assert_array_equal(np.array(first[1]), whole.numpy()[1::2])
    after_save, after_restore = json.loads(out["MASKED"])
    assert after_save == after_restore and after_save[0] != after_save[1]
    # Each host's slices are cut on that host (they were cut on the client's task, the coordinator); replica r
    # of a host gets the r-th half of that host's batch.
    assert json.loads(out["SLICES"]) == hosts
    host_batches, replicas = json.loads(out["SLICE_ROWS"])
    assert replicas == [host_batches[0][:2], host_batches[0][2:], host_batches[1][:2], host_batches[1][2:]]
    # The checkpoint holds both hosts' iterators, under names that say whose.
    keys = {name for name, _ in tf.train.list_variables(tf.train.latest_checkpoint(model_dir))}
    assert {"iterator_host_0/.ATTRIBUTES/ITERATOR_STATE", "iterator_host_1/.ATTRIBUTES/ITERATOR_STATE"} <= keys
    assert not any(key.startswith("iterator/") for key in keys)
    assert_same_weights(model_dir, reference)


def test_sigterm_to_one_of_two_workers_stops_both_at_one_step_and_resumes_exactly(setup, tmp_path):
    """One loop call per run (iterations_per_loop = the run's steps) and no checkpoint before the end, as in the
    paper recipes (1000 steps a loop there; 500 here keep the test short): SIGTERM to worker 1
    mid-loop stops both workers within seconds (their loop calls are sized to max_seconds_per_loop, and they
    agree on the stop between calls), both exit 143 with a checkpoint of the same step, and re-running both
    ends with the weights and logged metrics of an uninterrupted run."""
    steps = 500
    recipe = yaml.safe_load(open(setup["recipe"]))
    recipe.update(name="distributed_sigterm", num_train_steps=steps, save_checkpoints_steps=steps,
                  iterations_per_loop=steps, max_seconds_per_loop=1.0)
    recipe["phases"][0]["num_steps"] = steps
    path = tmp_path / "sigterm.yaml"
    path.write_text(yaml.safe_dump(recipe))
    stopped, reference = str(tmp_path / "stopped"), str(tmp_path / "uninterrupted")
    logs = [tmp_path / name for name in ("stopped_logs", "resumed_logs", "reference_logs")]
    for log in logs:
        log.mkdir()

    workers = start_workers(path, stopped, logs[0])
    deadline = time.monotonic() + 240
    while "the loop was traced" not in (logs[0] / "worker_0.log").read_text():
        assert all(w.poll() is None for w in workers), (logs[0] / "worker_0.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "training did not start in time"
        time.sleep(0.1)
    time.sleep(2)  # into the loop calls sized by time
    assert all(w.poll() is None for w in workers), "the run ended before the signal: raise `steps`"
    signalled = time.monotonic()
    workers[1].send_signal(signal.SIGTERM)
    stderrs = wait_for(workers, logs[0], timeout=120)
    seconds = time.monotonic() - signalled
    for worker, stderr in zip(workers, stderrs):
        assert worker.returncode == 143, stderr[-3000:]
    assert "SIGTERM received" in stderrs[1] and "SIGTERM received" not in stderrs[0]
    saved = latest_step(stopped)
    assert 0 < saved < steps, saved  # saved mid-loop, not at the loop's end
    assert latest_step(os.path.join(stopped, "workers", "worker_1")) == saved
    # Generous for a loaded 2-core machine: a loop call of ~1 s, one step, a save, and TensorFlow's exit.
    assert seconds < 30, f"the workers took {seconds:.1f} s to stop after SIGTERM"
    print(f"SIGTERM to worker 1: both saved step {saved} and exited 143 after {seconds:.2f} s")

    resumed = wait_for(start_workers(path, stopped, logs[1]), logs[1])
    assert all(f"(step {saved})" in stderr for stderr in resumed), resumed[0][-3000:]
    finished = wait_for(start_workers(path, reference, logs[2]), logs[2])
    assert all(f"step {steps}/{steps}" in stderr for stderr in resumed + finished), finished[0][-3000:]
    expected, got = (tf.train.load_checkpoint(tf.train.latest_checkpoint(d)) for d in (reference, stopped))
    for name in expected.get_variable_to_shape_map():
        if name.startswith("model/"):
            np.testing.assert_array_equal(got.get_tensor(name), expected.get_tensor(name), err_msg=name)
    expected_rows, rows = (read_history(os.path.join(d, "train_metrics.jsonl")) for d in (reference, stopped))
    assert [r["step"] for r in rows] == [r["step"] for r in expected_rows] == [steps]
    for name in ("loss", "masked_lm_loss", "masked_lm_accuracy", "next_sentence_accuracy", "grad_norm"):
        np.testing.assert_allclose(rows[0][name], expected_rows[0][name], rtol=1e-5, err_msg=name)


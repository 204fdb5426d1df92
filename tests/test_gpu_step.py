"""The GPU step, traced on CPUs with TensorFlow's own test device for the GPU-only path: MirroredStrategy over two
logical CPUs put on its no-merge-call path (`compat.use_no_merge_call`, as TF's `strategy_combinations` does). What
a GPU machine would run: the whole replica step (gradients, their all-reduce in bfloat16, the skip decision and
the optimizer's update) in one XLA cluster, the loop's stop flag and the metric window on the host's CPU, and
MultiWorkerMirroredStrategy made with the all-reduce asked for. Traced, never run: the collectives would need
GPUs."""

import json
import subprocess
import sys
import textwrap

import pytest

from helpers import REPO, python_path_env

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

SCRIPT = textwrap.dedent("""
    import collections, json, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from test_device_loop import CONFIG, dataset
    from bert_tf.compat import tensorflow_internals as compat
    from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay
    from bert_tf.training.metric_window import MetricWindow
    from bert_tf.training.pretraining import create_pretrainer
    from bert_tf.training.strategy import create_strategy, worker_layout
    from bert_tf.training.trainer import Trainer, replica_updated_counters

    strategy = compat.use_no_merge_call(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))

    def trainer(counters):
        keras.utils.set_random_seed(3)
        with strategy.scope():
            model = create_pretrainer(CONFIG, "mixed_bfloat16")
            with counters:
                optimizer = AdamWeightDecay(1e-3, aggregate_gradients=False, global_clipnorm=1.0)
        return Trainer(strategy, worker_layout(strategy), model, optimizer, jit_compile="step",
                       all_reduce_dtype="bfloat16")

    def graph_of(trainer):
        return trainer.train_loop.get_concrete_function(iter(dataset(2)), tf.constant(2)).graph.as_graph_def()

    report = {}
    # Keras' step counter as Keras makes it (ONLY_FIRST_REPLICA): its update needs merge_call inside the step.
    try:
        graph_of(trainer(__import__("contextlib").nullcontext()))
        report["keras_counter"] = "traced"
    except RuntimeError as e:
        report["keras_counter"] = str(e).splitlines()[-1].strip()[:200]

    # Made under another device's scope, as a GPU machine's default device would be: the flag stays on the CPU.
    with tf.device("/device:CPU:1"):
        step_trainer = trainer(replica_updated_counters())
        window = MetricWindow(["loss"])
    graph = graph_of(step_trainer)
    functions = {f.signature.name: f for f in graph.library.function}

    def ops(name, seen=()):
        found = []
        for node in functions[name].node_def:
            found.append(node)
            for attr in node.attr.values():
                if attr.func.name in functions and attr.func.name not in seen:
                    found += ops(attr.func.name, seen + (attr.func.name,))
        return found

    (loop,) = [n for n in graph.node if n.op in ("While", "StatelessWhile")]
    body = ops(loop.attr["body"].func.name)
    compiled = [n for n in body if n.attr["_XlaMustCompile"].b]
    inside = [o for n in compiled for o in ops(n.attr["f"].func.name)]
    inside_names = {id(o) for o in inside}
    outside = [o for o in body if id(o) not in inside_names]
    count = lambda nodes: dict(collections.Counter(n.op for n in nodes))
    report["compiled_calls"] = len(compiled)
    report["inside"] = count(inside)
    report["outside"] = count(outside)
    report["all_reduce_dtypes"] = sorted({tf.dtypes.as_dtype(n.attr["T"].type).name for n in inside
                                          if n.op == "CollectiveReduceV2"})
    report["stop_flag_reads"] = [n.device for n in ops(loop.attr["cond"].func.name) if n.op == "ReadVariableOp"]
    report["stop_flag"] = step_trainer.stop_requested.device
    report["metric_window"] = window.sums.device
    Implementation = tf.distribute.experimental.CommunicationImplementation
    nccl = create_strategy("multi_worker", all_reduce_implementation="nccl")
    report["multi_worker_nccl"] = Implementation(compat.communication_options(nccl).implementation).name
    print(json.dumps(report))
""")


def test_gpu_step_is_one_xla_cluster_with_its_all_reduce_and_update_and_host_side_flags():
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=python_path_env(), capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    # Without the fix: Keras' counter update broadcasts through merge_call, which cannot run in a compiled step.
    assert "merge_call" in report["keras_counter"], report["keras_counter"]
    # One compiled call per step holds both replicas' all-reduce (bfloat16 gradients) and the optimizer's
    # update; the loop body outside it neither all-reduces nor updates a variable.
    assert report["compiled_calls"] == 1, report
    inside, outside = report["inside"], report["outside"]
    assert inside.get("CollectiveReduceV2") == 2 and report["all_reduce_dtypes"] == ["bfloat16"], inside
    assert inside.get("AssignSubVariableOp", 0) > 0 and inside.get("AssignVariableOp", 0) > 0, inside
    assert not {"CollectiveReduceV2", "AssignVariableOp", "AssignSubVariableOp", "AssignAddVariableOp"} & set(
        outside), outside
    # The loop's condition reads the stop flag on the host's CPU:0, where the flag and the metric window live
    # although they were made under CPU:1's scope (a GPU machine's default device would be GPU:0).
    assert report["stop_flag_reads"] == ["/job:localhost/replica:0/task:0/device:CPU:0"], report
    assert report["stop_flag"].endswith("device:CPU:0") and report["metric_window"].endswith("device:CPU:0"), report
    assert report["multi_worker_nccl"] == "NCCL"

"""The training loop runs on the device: no per-step host reads, one gradient all-reduce per step, metrics reduced
once per loop, non-finite steps skipped in the graph, a stop flag read each step."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay
from bert_tf.training.pretraining import create_pretrainer
from bert_tf.training.strategy import worker_layout
from bert_tf.training.trainer import Trainer
from helpers import python_path_env, tiny_config
from pretraining_records import VOCAB_SIZE, feature_batches

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ, PRED = 16, 4
CONFIG = tiny_config(vocab_size=VOCAB_SIZE, num_hidden_layers=1, max_position_embeddings=SEQ,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

# Builds the loop under MirroredStrategy on two logical CPUs (which must be configured before TensorFlow starts,
# hence a subprocess) and reports what its graph does per step (the while body) and per loop (outside it).
GRAPH_SCRIPT = textwrap.dedent("""
    import collections, json, sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from test_device_loop import CONFIG, SEQ, PRED, make_trainer, dataset
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    trainer = make_trainer(strategy)
    graph = trainer.train_loop.get_concrete_function(iter(dataset(2)), tf.constant(2)).graph.as_graph_def()
    functions = {f.signature.name: f for f in graph.library.function}
    (loop,) = [n for n in graph.node if n.op in ("While", "StatelessWhile")]
    body, cond = functions[loop.attr["body"].func.name], functions[loop.attr["cond"].func.name]

    def ops(function, seen=()):
        # The function's ops and those of every function it calls (cond branches, the per-replica step).
        found = []
        for node in function.node_def:
            found.append(node.op)
            for attr in node.attr.values():
                name = attr.func.name
                if name in functions and name not in seen:
                    found += ops(functions[name], seen + (name,))
        return found

    def source(function, name):
        # The loop variable (input index) or op a value of the function comes from, through Identity ops.
        nodes = {n.name: n for n in function.node_def}
        args = [a.name for a in function.signature.input_arg]
        while True:
            base = name.split(":")[0].lstrip("^")
            if base in args:
                return args.index(base)
            node = nodes[base]
            if node.op != "Identity":
                return node
            name = node.input[0]

    # Loop variables the condition reads, and what the body passes on for each of them.
    args = [a.name for a in cond.signature.input_arg]
    used = sorted({args.index(i.split(":")[0]) for n in cond.node_def for i in n.input
                   if i.split(":")[0] in args})
    carried = {}
    for index in used:
        out = source(body, body.ret[body.signature.output_arg[index].name])
        if isinstance(out, int):
            carried[index] = "unchanged" if out == index else f"loop variable {out}"
        else:
            inputs = [source(body, i) for i in out.input]
            carried[index] = out.op + "(" + ", ".join(
                "self" if x == index else (x.op if not isinstance(x, int) else f"loop variable {x}")
                for x in inputs) + ")"
    # Sums whose inputs sit on different replicas' devices: a metric reduced across replicas inside a step. A
    # replica's slice of its host's batch is cut on the host's CPU (strategy.split_per_replica), so an input from
    # the slicing is the host's, not another replica's.
    nodes = {n.name: n for n in body.node_def}
    def replica_input_devices(node):
        names = [i.split(":")[0].lstrip("^") for i in node.input]
        return {nodes[name].device for name in names if name in nodes and "replica_slice" not in name} - {""}
    cross_replica_sums = [n.name for n in body.node_def
                          if n.op in ("AddN", "AddV2", "Add", "Sum") and len(replica_input_devices(n)) > 1]
    print(json.dumps({
        "body": collections.Counter(ops(body)), "cross_replica_sums": cross_replica_sums,
        "outside": collections.Counter(n.op for n in graph.node), "cond": collections.Counter(ops(cond)),
        "cond_reads": carried,
        "replicas": strategy.num_replicas_in_sync}))
""")


def make_trainer(strategy, learning_rate=1e-3):
    keras.utils.set_random_seed(3)
    with strategy.scope():
        model = create_pretrainer(CONFIG)
        optimizer = AdamWeightDecay(learning_rate, aggregate_gradients=False, global_clipnorm=1.0)
    return Trainer(strategy, worker_layout(strategy), model, optimizer)


def dataset(num_batches, nan_at=None):
    batches = feature_batches(num_batches, 8, SEQ, PRED, seed=11)
    stacked = {k: np.stack([b[k] for b in batches]) for k in batches[0]}
    if nan_at is not None:
        stacked["masked_lm_weights"] = stacked["masked_lm_weights"].astype(np.float32)
        stacked["masked_lm_weights"][nan_at, 0, 0] = np.nan
    return tf.data.Dataset.from_tensor_slices(stacked)


def test_mirrored_loop_graph_is_device_side():
    run = subprocess.run([sys.executable, "-c", GRAPH_SCRIPT], cwd=REPO, env=python_path_env(), capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    graph = json.loads(run.stdout.strip().splitlines()[-1])
    body, outside, replicas = graph["body"], graph["outside"], graph["replicas"]
    assert replicas == 2
    # One all-reduce per step: one collective per replica, gradients and loss packed together.
    assert body.get("CollectiveReduceV2", 0) == replicas, body
    # Nothing in a step goes back to the host or reduces metrics across replicas: no ops that copy to the host,
    # no cross-replica sums of metric values (the per-loop reduction is the AddN over the replicas' accumulators,
    # outside the loop).
    assert not {"_Send", "_Recv", "Send", "Recv", "PyFunc", "EagerPyFunc", "OutfeedEnqueue"} & set(body), body
    assert graph["cross_replica_sums"] == [], graph["cross_replica_sums"]
    assert outside.get("AddN", 0) == 1 and outside.get("CollectiveReduceV2", 0) == 0, outside
    # The condition reads the step counter (plus one each step), the number of steps (unchanged) and the stop
    # flag (a variable), never a value a replica computed.
    assert sorted(graph["cond_reads"].values()) in (["AddV2(self, Const)", "unchanged", "unchanged"],
                                                     ["AddV2(Const, self)", "unchanged", "unchanged"]), graph
    assert graph["cond"].get("ReadVariableOp", 0) == 1, graph["cond"]


def test_non_finite_step_is_skipped_on_the_device_and_reported():
    strategy = tf.distribute.get_strategy()
    reference = make_trainer(strategy)
    good = reference.train(iter(dataset(2)), 2)
    assert good.steps == 2 and good.bad_step is None and reference.step == 2

    trainer = make_trainer(strategy)
    result = trainer.train(iter(dataset(4, nan_at=2)), 4)
    # The loop ran its four steps (its condition does not look at the loss) but applied only the two before the
    # bad one: the weights and the step are those of two good steps, and the bad step is named.
    assert result.steps == 4 and result.bad_step == 2 and np.isnan(result.bad_loss)
    assert trainer.step == 2
    for a, b in zip(reference.model.trainable_variables, trainer.model.trainable_variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(result.means["loss"], good.means["loss"], rtol=1e-6)


def test_stop_flag_ends_the_loop_after_the_current_step():
    trainer = make_trainer(tf.distribute.get_strategy())
    trainer.stop_requested.assign(True)
    result = trainer.train(iter(dataset(3)), 3)
    assert result.steps == 0 and trainer.step == 0
    trainer.stop_requested.assign(False)
    assert trainer.train(iter(dataset(3)), 3).steps == 3 and trainer.step == 3


EVAL_SCRIPT = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from test_device_loop import make_trainer, dataset
    from bert_tf.training.evaluation import evaluate
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    model = make_trainer(strategy).model
    batches = dataset(3)
    print(json.dumps({"mirrored": evaluate(model, batches, strategy=strategy),
                      "one_device": evaluate(model, batches, strategy=tf.distribute.get_strategy())}))
""")


def test_evaluation_on_two_replicas_equals_one_device():
    """Each eval batch split over two replicas (strategy.run) gives the numbers of the whole batch on one device
    (which tests/test_evaluation.py checks against the original metric_fn)."""
    run = subprocess.run([sys.executable, "-c", EVAL_SCRIPT], cwd=REPO, env=python_path_env(), capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    mirrored, one_device = results["mirrored"], results["one_device"]
    assert mirrored["eval_batches"] == one_device["eval_batches"] == 3
    assert set(mirrored) == set(one_device) and "next_sentence_accuracy" in mirrored
    for name, value in one_device.items():
        np.testing.assert_allclose(mirrored[name], value, rtol=1e-5, err_msg=name)

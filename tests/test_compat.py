"""Canaries for the TensorFlow/Keras internals the package uses (bert_tf/compat/): each exercises the behaviour the
package relies on and fails with "TensorFlow/Keras changed X" when a new version breaks it; and a guard that no module
outside bert_tf/compat/ uses an internal."""

import ast
import importlib
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.compat import PRIVATE_OVERRIDES, keras_internals, tensorflow_internals
from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay
from bert_tf.training.input_hosts import HostIterator
from helpers import REPO

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

PACKAGE = os.path.join(REPO, "bert_tf")
COMPAT = os.path.join(PACKAGE, "compat")
INTERNAL_MODULES = ("tensorflow.python", "tensorflow.core", "tensorflow.compiler", "tensorflow.lite", "keras.src")
# Documented Python functions whose names start with "_" (os._exit: leave without the interpreter's teardown;
# a NamedTuple's _replace: a copy with fields replaced).
PUBLIC_UNDERSCORED = {"_exit", "_replace"}
# Bases whose private methods the package's classes may override only when registered.
FRAMEWORK_BASES = (tf.Module, keras.layers.Layer, keras.Model, keras.optimizers.Optimizer,
                   tensorflow_internals.Trackable, keras.optimizers.schedules.LearningRateSchedule, tf.train.Checkpoint)


def test_iterator_state_round_trip():
    iterator = iter(tf.data.Dataset.range(10))
    [next(iterator) for _ in range(3)]
    state = tensorflow_internals.iterator_state(iterator)
    [next(iterator) for _ in range(4)]
    tensorflow_internals.restore_iterator_state(iterator, state)
    assert int(next(iterator)) == 3, (
        "TensorFlow changed the tf.data iterator's _serialize_to_tensors/_restore_from_tensors")


def test_host_iterator_checkpoint_round_trip(tmp_path):
    # The registered overrides, through the path TensorFlow uses: tf.train.Checkpoint save and restore.
    iterator = iter(tf.data.Dataset.range(10))
    checkpoint = tf.train.Checkpoint(iterator=HostIterator(iterator, "/cpu:0"))
    [next(iterator) for _ in range(3)]
    path = checkpoint.save(str(tmp_path / "ckpt"))
    [next(iterator) for _ in range(4)]
    checkpoint.restore(path).assert_consumed()
    assert int(next(iterator)) == 3, "TensorFlow changed how a Trackable's _serialize_to_tensors is saved and restored"
    keys = {name for name, _ in tf.train.list_variables(path)}
    assert tensorflow_internals.OBJECT_GRAPH_KEY in keys, "TensorFlow changed the checkpoint's object-graph key"
    assert "iterator/.ATTRIBUTES/ITERATOR_STATE" in keys, "TensorFlow changed a saved iterator's key"


def test_iterator_copy_for_async_checkpoints():
    iterator = iter(tf.data.Dataset.range(10))
    [next(iterator) for _ in range(3)]
    object_map = {}
    copy = tensorflow_internals.copy_iterator_to_cpu(iterator, object_map)
    [next(iterator) for _ in range(4)]
    assert int(next(copy)) == 3, "TensorFlow changed the tf.data iterator's _copy_trackable_to_cpu"
    [next(iterator) for _ in range(2)]
    assert tensorflow_internals.copy_iterator_to_cpu(iterator, object_map) is copy and int(next(copy)) == 10 - 1, (
        "TensorFlow changed the tf.data iterator's _copy_trackable_to_cpu (a second copy refreshes the first)")


def test_async_checkpoints_of_keras_variables_and_host_iterators(tmp_path):
    # Through the path TensorFlow uses: three asynchronous saves, training moving on while each is written. Keras
    # 3.15's own copy raises at the second save; a host iterator without the hook is written steps late.
    tensorflow_internals.copy_keras_variables_once_for_async_checkpoints()
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    iterator = iter(tf.data.Dataset.range(100).shuffle(10, seed=1))
    checkpoint = tf.train.Checkpoint(layer=layer, iterator=HostIterator(iterator, "/cpu:0"))
    manager = tf.train.CheckpointManager(checkpoint, str(tmp_path), max_to_keep=5)
    saved = {}
    for step in range(3):
        layer.kernel.assign(tf.fill([3, 2], float(step)))
        path = manager.save(step, options=tf.train.CheckpointOptions(enable_async=True))
        saved[path] = (step, int(next(iterator)))
        next(iterator)
    manager.sync()
    for path, (step, record) in saved.items():
        restored = iter(tf.data.Dataset.range(100).shuffle(10, seed=1))
        tf.train.Checkpoint(layer=layer, iterator=HostIterator(restored, "/cpu:0")).restore(path)
        assert float(layer.kernel.numpy()[0, 0]) == step, "Keras changed how async checkpoints copy a variable"
        assert int(next(restored)) == record, "TensorFlow changed how async checkpoints copy a Trackable"


def test_strategy_supports_no_merge_call():
    # The default strategy updates without merge_call; MirroredStrategy outside XLA needs it.
    assert tensorflow_internals.strategy_supports_no_merge_call() is True, (
        "TensorFlow changed strategy_supports_no_merge_call under the default strategy")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    seen = []

    @tf.function
    def step():
        strategy.run(lambda: seen.append(tensorflow_internals.strategy_supports_no_merge_call()))

    step()
    assert seen == [False], "TensorFlow changed strategy_supports_no_merge_call under MirroredStrategy"


def test_use_no_merge_call_is_tensorflows_test_device_for_the_gpu_path():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        assert tensorflow_internals.strategy_supports_no_merge_call() is False
    tensorflow_internals.use_no_merge_call(strategy)
    with strategy.scope():
        assert tensorflow_internals.strategy_supports_no_merge_call() is True, (
            "TensorFlow changed StrategyExtended._use_merge_call")


def test_tpu_strategy_updates_through_merge_call():
    # Trainer._apply_if's TPU branch: TPUExtended keeps StrategyExtendedV1's `_use_merge_call` (always True).
    from tensorflow.python.distribute import distribute_lib, tpu_strategy
    assert tpu_strategy.TPUExtended._use_merge_call is distribute_lib.StrategyExtendedV1._use_merge_call, (
        "TensorFlow changed TPUStrategy's merge_call path: pin Trainer._apply_if's branch again")


def test_communication_options():
    options = tensorflow_internals.communication_options(tf.distribute.MirroredStrategy(["/cpu:0"]))
    assert options.implementation == tf.distribute.experimental.CommunicationImplementation.RING, (
        "TensorFlow changed where a strategy keeps its CommunicationOptions")


def test_hlo_protos():
    @tf.function(jit_compile=True)
    def matmul(a, b):
        return tf.matmul(a, b)

    a = tf.ones([2, 3], tf.bfloat16)
    serialized = matmul.experimental_get_compiler_ir(a, tf.ones([3, 4], tf.bfloat16))(stage="hlo_serialized")
    module = tensorflow_internals.hlo_module(serialized)
    dots = [i for c in module.computations for i in c.instructions if i.opcode == "dot"]
    assert dots, "TensorFlow changed the HLO module proto (no dot found)"
    assert tensorflow_internals.primitive_type_name(dots[0].shape.element_type) == "bf16", (
        "TensorFlow changed XLA's PrimitiveType names")
    optimized = matmul.experimental_get_compiler_ir(a, tf.ones([3, 4], tf.bfloat16))(
        stage="optimized_hlo_proto_serialized")
    assert tensorflow_internals.hlo_buffer_assignment(optimized).logical_buffers, (
        "TensorFlow changed the HLO proto's buffer assignment")


def test_xla_custom_call_emits_the_target_with_its_config_and_result_shapes():
    specs = [tf.TensorSpec([2, 3], tf.bfloat16), tf.TensorSpec([0], tf.uint8)]

    @tf.function(jit_compile=True)
    def call(a):
        return tensorflow_internals.xla_custom_call("__test$target", [a], specs, '{"k": 1}')[0]

    hlo = call.experimental_get_compiler_ir(tf.ones([2, 3], tf.bfloat16))(stage="hlo")
    line = next((line for line in hlo.splitlines() if " custom-call(" in line), "")
    assert 'custom_call_target="__test$target"' in line and "(bf16[2,3]{1,0}, u8[0]{0})" in line, (
        "TensorFlow changed custom_call_v2 (no custom call with the target and result shapes asked for)")
    assert line.endswith('backend_config={"k": 1}'), (
        f"TensorFlow changed how custom_call_v2 writes the backend config: {line[-200:]}")


def test_in_xla_compilation_is_true_only_inside_a_compiled_function():
    seen = {}

    @tf.function(jit_compile=True)
    def compiled(x):
        @tf.function
        def inner(y):
            seen["inner"] = tensorflow_internals.in_xla_compilation()
            return y
        seen["compiled"] = tensorflow_internals.in_xla_compilation()
        return inner(x)

    @tf.function
    def plain(x):
        seen["plain"] = tensorflow_internals.in_xla_compilation()
        return x

    compiled(tf.ones(1))
    plain(tf.ones(1))
    seen["eager"] = tensorflow_internals.in_xla_compilation()
    assert seen == {"compiled": True, "inner": True, "plain": False, "eager": False}, (
        f"TensorFlow changed control_flow_util.GraphOrParentsInXlaContext: {seen}")

def test_scalar_summary_metadata(tmp_path):
    with tf.summary.create_file_writer(str(tmp_path)).as_default(step=1):
        tf.summary.write("loss", tf.constant(0.5), metadata=tensorflow_internals.scalar_summary_metadata())
    event_file = next(p for p in os.listdir(tmp_path) if "tfevents" in p)
    values = [v for e in tf.compat.v1.train.summary_iterator(str(tmp_path / event_file)) for v in e.summary.value]
    assert values[0].metadata.plugin_data.plugin_name == "scalars", "TensorFlow changed SummaryMetadata"
    assert tf.make_ndarray(values[0].tensor) == np.float32(0.5)


def test_read_saved_model_proto(tmp_path):
    module = tf.Module()
    module.f = tf.function(lambda x: x + 1, input_signature=[tf.TensorSpec([], tf.float32)])
    tf.saved_model.save(module, str(tmp_path), signatures=module.f)
    saved_model = tensorflow_internals.read_saved_model_proto(str(tmp_path))
    ops = {n.op for g in saved_model.meta_graphs for f in g.graph_def.library.function for n in f.node_def}
    assert "AddV2" in ops, "TensorFlow changed the SavedModel proto"


def test_variable_index():
    optimizer = keras.optimizers.SGD()
    variables = [keras.Variable(1.0), keras.Variable(2.0)]
    optimizer.build(variables)
    assert [keras_internals.variable_index(optimizer, v) for v in variables] == [0, 1], (
        "Keras changed Optimizer._get_variable_index")


def test_optimizer_gradient_sum_override_is_called():
    # The override only works while Keras' TensorFlow optimizer routes apply() through _all_reduce_sum_gradients.
    calls = []

    class Counting(AdamWeightDecay):
        def _all_reduce_sum_gradients(self, grads_and_vars):
            calls.append(len(list(grads_and_vars)))
            return super()._all_reduce_sum_gradients(grads_and_vars)

    variable = keras.Variable(np.ones(3, np.float32))
    Counting(learning_rate=0.1).apply([tf.ones(3)], [variable])
    assert calls == [1], "Keras changed Optimizer._all_reduce_sum_gradients (the aggregate_gradients=False override)"


def test_registered_overrides_exist_and_override_a_framework_method():
    for path, reason in PRIVATE_OVERRIDES.items():
        module_name, class_name, method = path.rsplit(".", 2)
        cls = getattr(importlib.import_module(module_name), class_name)
        assert method in vars(cls), f"{path} is registered but not defined"
        assert any(hasattr(base, method) for base in cls.__mro__[1:]), f"TensorFlow/Keras no longer has {method}"
        assert reason


def _modules():
    for root, _, files in os.walk(PACKAGE):
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(".py") and not path.startswith(COMPAT + os.sep):
                yield os.path.relpath(path, REPO), ast.parse(open(path, encoding="utf-8").read())


def _names_defined(trees):
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def test_no_internals_outside_compat():
    modules = list(_modules())
    ours = _names_defined(tree for _, tree in modules)
    found = []
    for path, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                found += [f"{path}:{node.lineno} imports {n}" for n in names
                          if n.startswith(INTERNAL_MODULES) or n.endswith("_pb2")]
            elif isinstance(node, ast.Attribute) and node.attr == "__internal__":
                found.append(f"{path}:{node.lineno} uses {ast.unparse(node)}")
            elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                  and node.attr not in ours and node.attr not in PUBLIC_UNDERSCORED):
                found.append(f"{path}:{node.lineno} uses {ast.unparse(node)}")
    assert not found, "TensorFlow/Keras internals outside bert_tf/compat/: " + "; ".join(found)


def test_private_overrides_are_registered():
    unregistered = []
    for path, tree in _modules():
        module_name = path[:-3].replace(os.sep, ".")
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if not (isinstance(item, ast.FunctionDef) and item.name.startswith("_")
                        and not item.name.startswith("__")):
                    continue
                if any(hasattr(base, item.name) for base in FRAMEWORK_BASES):
                    if f"{module_name}.{node.name}.{item.name}" not in PRIVATE_OVERRIDES:
                        unregistered.append(f"{module_name}.{node.name}.{item.name}")
    assert not unregistered, f"private TensorFlow/Keras methods overridden without a compat entry: {unregistered}"

"""TensorFlow internals the package uses, each with its reason. See `bert_tf.compat` for the rules and
`tests/test_compat.py` for the canaries."""

import os

import tensorflow as tf
from tensorflow.compiler.tf2xla.python import xla as tf2xla
from tensorflow.compiler.xla import xla_data_pb2
from tensorflow.compiler.xla.service import hlo_pb2
from tensorflow.core.framework import summary_pb2
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.ops import control_flow_util

# The base class of objects a `tf.train.Checkpoint` saves through `_serialize_to_tensors`. Why: a host's iterator
# must be saved on the host's device (training/input_hosts.py); TensorFlow exports the class only as internal API.
Trackable = tf.__internal__.tracking.Trackable

# The key under which every object-based checkpoint stores its object graph. Why: telling a bert_tf checkpoint from
# a TF1 one by its keys (training/checkpointing.py) needs the name; TensorFlow keeps the constant private.
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def iterator_state(iterator):
    """The serialized state of a `tf.data` iterator (a variant tensor), as a checkpoint saves it.

    Why: `HostIterator` saves the state itself, on its host's device; the iterator exposes it only through the
    private checkpoint hook.
    """
    return iterator._serialize_to_tensors()["_STATE"]


def restore_iterator_state(iterator, state):
    """Restores a `tf.data` iterator from `iterator_state`'s tensor (the restore half of the same hook)."""
    return iterator._restore_from_tensors({"_STATE": state})


def copy_iterator_to_cpu(iterator, object_map):
    """The copy of a `tf.data` iterator that an asynchronous checkpoint writes: an iterator of the same dataset with
    the state `iterator` has now, made on the first call and refreshed on later ones (kept in `object_map`).

    Why: `HostIterator` takes part in asynchronous checkpoints (training/input_hosts.py) through the hook TensorFlow's
    async checkpointer calls, `_copy_trackable_to_cpu`; the tf.data iterator implements it, privately.
    """
    iterator._copy_trackable_to_cpu(object_map)
    return object_map[iterator]


def copy_keras_variables_once_for_async_checkpoints():
    """Makes TensorFlow's asynchronous checkpoints work with Keras 3 variables from the second save on.

    Why: an asynchronous checkpoint copies every variable with `_copy_trackable_to_cpu`, inside a `tf.function`
    from the second save on. Keras 3.15's `Variable._copy_trackable_to_cpu` (keras/src/backend/tensorflow/core.py)
    maps the variable to a new `tf.Variable` on every call, which raises there ("tf.function only supports singleton
    tf.Variables created on the first call"). A Keras variable saves what its `value` saves, so the copy TensorFlow
    keeps (and refreshes) of its `value` is its copy too. Replaces the Keras method, once per process.
    """
    from keras.src.backend.tensorflow.core import Variable

    def copy_to_cpu(variable, object_map):
        variable.value._copy_trackable_to_cpu(object_map)
        object_map[variable] = object_map[variable.value]

    Variable._copy_trackable_to_cpu = copy_to_cpu


def strategy_supports_no_merge_call():
    """True when the current strategy updates variables from a replica without `merge_call`: the default strategy,
    and MirroredStrategy / MultiWorkerMirroredStrategy inside XLA on GPUs. TPUStrategy, OneDeviceStrategy and
    MirroredStrategy elsewhere update through `merge_call` (`TPUExtended` keeps the base class's answer).

    Why: applying the optimizer under a `tf.cond` must go through `merge_call` where the strategy uses it
    (`Trainer._apply_if`); TensorFlow exposes the test only as internal API, as Keras' LossScaleOptimizer uses it.
    """
    return tf.__internal__.distribute.strategy_supports_no_merge_call()


def use_no_merge_call(strategy):
    """Puts a MirroredStrategy or MultiWorkerMirroredStrategy on the path it takes inside XLA on GPUs (replicas
    update without `merge_call`), whatever its devices, and returns it. Tests only: TensorFlow's own test device
    for that path (`strategy_combinations`' no-merge-call strategies set the same attribute), so the GPU step can
    be traced on CPUs.

    Why: the choice is the private method `StrategyExtended._use_merge_call`; nothing public selects the path.
    """
    strategy.extended._use_merge_call = lambda: False
    return strategy


def communication_options(strategy):
    """The `tf.distribute.experimental.CommunicationOptions` a MirroredStrategy or MultiWorkerMirroredStrategy
    all-reduces with (its `implementation`: NCCL, RING or AUTO).

    Why: the strategy keeps them in the private `extended._communication_options`, with no public accessor; the
    tests check that the run made its strategy with the implementation it asked for.
    """
    return strategy.extended._communication_options


def hlo_module(serialized):
    """The `HloModuleProto` of a lowered program (`experimental_get_compiler_ir(...)(stage="hlo_serialized")`).

    Why: counting a program's dots, dtypes, host transfers and dynamic shapes (analysis/compiled_program.py) needs
    the HLO as data; XLA's protos ship inside TensorFlow without a public Python API.
    """
    return hlo_pb2.HloModuleProto.FromString(serialized)


def hlo_buffer_assignment(serialized_hlo_proto):
    """The buffer assignment of a compiled program (`stage="optimized_hlo_proto_serialized"`), for its memory."""
    return hlo_pb2.HloProto.FromString(serialized_hlo_proto).buffer_assignment


def primitive_type_name(element_type):
    """An XLA element type's name in lower case ("bf16", "f32")."""
    return xla_data_pb2.PrimitiveType.Name(element_type).lower()


def scalar_summary_metadata():
    """The summary metadata of a TensorBoard scalar.

    Why: `tf.summary.scalar` needs the tensorboard package, which only viewing the logs requires; writing the
    scalars plugin's metadata with TensorFlow's own proto avoids the dependency.
    """
    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))


def read_saved_model_proto(export_dir):
    """The `SavedModel` protocol buffer of `export_dir`/saved_model.pb.

    Why: listing the ops a serving graph runs (serving/graph_ops.py) needs the graph as data, with no session.
    """
    saved_model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    return saved_model


def xla_custom_call(target, operands, result_specs, backend_config):
    """The results (a tuple) of an XLA `custom-call` to `target` with `operands`, results shaped as `result_specs`
    (`tf.TensorSpec`s, every operand and result in XLA's default layout) and the `backend_config` string. Only
    inside an XLA-compiled function; the backend that compiles it must know the target.

    Why: cuDNN's flash attention is reachable from a TensorFlow program only as XLA:GPU's custom call
    (`accelerators/cudnn_flash_attention.py`); TensorFlow emits one through the private
    `tensorflow.compiler.tf2xla.python.xla.custom_call_v2`, which `tf.raw_ops` does not expose.
    """
    return tf2xla.custom_call_v2(target, operands, result_specs, backend_config=backend_config,
                                 has_side_effect=False)


def in_xla_compilation():
    """True while tracing a function that XLA compiles (`tf.function(jit_compile=True)`, or one it calls).

    Why: an op that exists only as an XLA custom call must fall back to plain ops outside XLA (evaluation or export
    traced without `jit_compile`); TensorFlow keeps the test in the private `control_flow_util`.
    """
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())

"""The one owner of TensorFlow's and Keras' internals: every use of a private method, `tf.__internal__`, a `*_pb2`
protocol buffer module or `tensorflow.python` / `keras.src` in the package goes through this package, with its
reason, and `tests/test_compat.py` exercises each one (a canary that fails with "TensorFlow/Keras changed X" when a
new version breaks it). `tests/test_compat.py` also checks that no other module uses an internal.

Two modules, because the Keras layers and optimizers must import without TensorFlow (they run under JAX):
- `keras_internals`: Keras only;
- `tensorflow_internals`: everything that needs TensorFlow.

Some internals are overrides of private methods, which must stay in their class; they are registered in
`PRIVATE_OVERRIDES` below with their reason, and the canary test calls each through the path TensorFlow or Keras
uses.

Example:
>>> sorted(PRIVATE_OVERRIDES)[0]
'bert_tf.optimizers.weight_decay_optimizer.WeightDecayOptimizer._all_reduce_sum_gradients'
"""

# "module.Class._method": why the class overrides a private method of its TensorFlow/Keras base.
PRIVATE_OVERRIDES = {
    "bert_tf.optimizers.weight_decay_optimizer.WeightDecayOptimizer._all_reduce_sum_gradients":
        "Keras' TensorFlow optimizer sums gradients across replicas inside `apply`; the training loop averages them "
        "itself before (once per step, over micro-batches too), so the optimizer must not sum them again.",
    "bert_tf.training.input_hosts.HostIterator._serialize_to_tensors":
        "A checkpoint saves a Trackable through this hook; the host iterator saves its tf.data iterator's state on "
        "the host's CPU, where a dataset on another task can be asked for its options.",
    "bert_tf.training.input_hosts.HostIterator._restore_from_tensors":
        "The restore half of the hook above, on the host's CPU.",
    "bert_tf.training.input_hosts.HostIterator._copy_trackable_to_cpu":
        "An asynchronous checkpoint writes a copy of each object taken when `save` is called, made by this hook; "
        "without it TensorFlow skips the copy and writes the iterator as it is when the writing thread gets to it, "
        "steps later.",
}

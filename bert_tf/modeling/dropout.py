"""`BertDropout`: Keras dropout whose masks differ between the replicas of a data-parallel step.

Keras draws a dropout mask from the layer's seed-generator state, a variable that `tf.distribute` mirrors: every
replica reads the same state, so every replica draws the same mask for the same shape. Data parallelism then
trains on one dropout pattern per step instead of one per replica. The training step says which replica it is
(`dropout_stream`), and each replica draws from its own stream of seeds, still a pure function of the checkpointed
state, so runs stay deterministic and resumable. Micro-batches need nothing more: each call advances the state.
"""

import contextlib
import threading

import keras
from keras import ops

# Per thread: MirroredStrategy traces each replica's step in its own thread.
_STREAM = threading.local()


@contextlib.contextmanager
def dropout_stream(index, count):
    """Makes the `BertDropout` layers called inside draw from seed stream `index` of `count` (the replica id and
    the number of replicas in sync). `index` may be a tensor (TPUStrategy's replica id is one); one stream (count 1)
    changes nothing.

    Example:
    >>> layer = BertDropout(0.5, seed=1)
    >>> with dropout_stream(1, 2):
    ...     tuple(layer(ops.ones((2, 4)), training=True).shape)
    (2, 4)
    """
    previous = getattr(_STREAM, "value", None)
    _STREAM.value = (index, count) if count > 1 else None
    try:
        yield
    finally:
        _STREAM.value = previous


@keras.saving.register_keras_serializable(package="bert_tf")
class BertDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` that, inside `dropout_stream(index, count)`, draws with the seed
    [key, counter * count + index] instead of Keras' [key, counter]: a distinct seed for every (step, replica)
    pair as long as counter * count stays below 2^31 (TensorFlow reduces seeds to int32), e.g. 8M steps on 256
    replicas. Outside a stream, or with one stream, it is exactly Keras' dropout (same seeds, same masks).

    Example:
    >>> layer = BertDropout(0.1)
    >>> tuple(layer(ops.ones((2, 8)), training=False).shape)
    (2, 8)
    """

    def call(self, inputs, training=False):
        stream = getattr(_STREAM, "value", None)
        if not training or self.rate == 0 or stream is None:
            return super().call(inputs, training=training)
        index, count = stream
        state = self.seed_generator.state
        seed = self.seed_generator.next()  # advances the shared state once, as every replica does
        replica_seed = seed * ops.convert_to_tensor([1, count], seed.dtype) + ops.stack(
            [ops.zeros((), seed.dtype), ops.cast(index, seed.dtype)])
        # Keras' random ops take a seed only from a generator's state: draw once from the replica's seed.
        with keras.StatelessScope(state_mapping=[(state, replica_seed)]):
            return super().call(inputs, training=training)

"""`BertDropout`: Keras dropout whose masks differ between the replicas of a data-parallel step.

Keras draws a dropout mask from the layer's seed-generator state, a variable that `tf.distribute` mirrors: every
replica reads the same state, so every replica draws the same mask for the same shape. Data parallelism then
trains on one dropout pattern per step instead of one per replica. The training step says which replica it is
(`dropout_stream`), and each replica draws from its own stream of seeds, still a pure function of the checkpointed
state, so runs stay deterministic and resumable. Micro-batches need nothing more: each call advances the state.
Under a 16-bit compute dtype the backward pass draws the call's mask again from its seed instead of keeping it.
"""

import contextlib
import threading

import keras
from keras import ops

from bert_tf.modeling.recomputation import recomputes, tied_to_backward

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
        if not training or self.rate == 0:
            return super().call(inputs, training=training)
        seed = self.next_seed()
        if recomputes(inputs):
            return self.dropout_regenerating_mask(inputs, seed)
        return self.dropout_with_seed(inputs, seed)

    def next_seed(self):
        """The seed of this call's mask, advancing the layer's state once (as Keras' dropout does): Keras' seed,
        or inside `dropout_stream(index, count)` the replica's. A caller that applies the mask twice (the attention
        recomputes it in its backward pass) draws here once and passes the seed to `dropout_with_seed`."""
        seed = self.seed_generator.next()
        stream = getattr(_STREAM, "value", None)
        if stream is None:
            return seed
        index, count = stream
        return seed * ops.convert_to_tensor([1, count], seed.dtype) + ops.stack(
            [ops.zeros((), seed.dtype), ops.cast(index, seed.dtype)])

    def dropout_regenerating_mask(self, inputs, seed):
        """`dropout_with_seed` whose backward pass draws the mask again from `seed` instead of keeping it (XLA kept
        the random values, 2 bytes per element under bfloat16): the 16-bit training path."""

        @ops.custom_gradient
        def dropped(x, seed):
            def grad(*args, upstream=None):
                if upstream is None:
                    (upstream,) = args
                # Dropout's gradient is the same mask and scale applied to the incoming gradient.
                return self.dropout_with_seed(upstream, tied_to_backward(seed, upstream)), None

            return self.dropout_with_seed(x, seed), grad

        return dropped(inputs, seed)

    def dropout_with_seed(self, inputs, seed):
        """Training-mode dropout of `inputs` with the mask of `seed` (from `next_seed`); the layer's state is left
        as it is, so the same seed on the same shape and dtype gives the same mask again."""
        # Keras' random ops take a seed only from a generator's state: map the state to `seed` for one draw.
        with keras.StatelessScope(state_mapping=[(self.seed_generator.state, seed)]):
            return super().call(inputs, training=True)

"""The id-tensor specs of the serving signatures and the in-graph checks that make bad inputs fail clearly.

A serving graph cannot raise a Python error: a request with more tokens than the model has positions, a negative
id or a tensor of the wrong rank would otherwise fail deep inside a slice ("slice index out of bounds") or, on
GPU, read zeros or the last table row and return garbage. `checked_inputs` runs these asserts first, each naming
the input, the limit and the fix; every SavedModel of the package (encoder, `mlm`, task models) uses it.
docs/serving.md states what each entry point accepts.
"""

import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.modeling.encoder import ENCODER_INPUTS

POSITIONS = "masked_lm_positions"


def id_specs(names=ENCODER_INPUTS):
    """int32 [batch, seq_length] specs, both dimensions free, named as the inputs of the TF Hub BERT API."""
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in names}


def check_seq_length(seq_length, max_seq_length):
    """Refuses a packing length that cannot hold [CLS] A [SEP] or that the model has no positions for."""
    if not 3 <= seq_length <= max_seq_length:
        raise InputError(f"seq_length={seq_length} must lie in [3, max_position_embeddings={max_seq_length}]: pass "
                         f"--max_seq_length within it.")


def _rank(tensor):
    """The rank `tensor` has when the graph runs, hidden from shape inference.

    The signatures declare [None, None], and a served request can still feed another rank (neither the session
    loader nor a Python call of a loaded signature checks a feed against the declared shape). Grappler folds
    `Rank`, `Size(Shape)` and the like of a tensor with a declared rank to that constant (in the Python loader's
    runtime it did: the check vanished and a rank-3 input failed inside a reshape), so the shape goes through a
    serialize/parse round trip, whose output shape is unknown by definition; it costs a copy of rank-many ints.
    """
    shape = tf.io.parse_tensor(tf.io.serialize_tensor(tf.shape(tensor)), tf.int32)
    return tf.size(shape)


def _extreme(reduce, tensor):
    """max/min of `tensor`, 0 for an empty one (so an empty batch passes the id checks)."""
    return reduce(tf.concat([[0], tf.reshape(tensor, [-1])], 0))


def _in_range(name, tensor, upper, upper_hint):
    return [
        tf.debugging.assert_non_negative(_extreme(tf.reduce_min, tensor),
                                         message=f"{name} holds a negative id: ids start at 0"),
        tf.debugging.assert_less(_extreme(tf.reduce_max, tensor), upper, message=f"{name} holds {upper_hint}"),
    ]


def input_asserts(inputs, config):
    """The asserts (graph ops) on the three id tensors, and `masked_lm_positions` when present: rank 2, one
    shape, 1 to `max_position_embeddings` tokens, ids inside the vocab and segment tables, positions inside the
    sequence."""
    word_ids = inputs["input_word_ids"]
    limit = config.max_position_embeddings
    rank_asserts = [tf.debugging.assert_equal(_rank(inputs[name]), 2,
                                              message=f"{name} must be a rank-2 int32 tensor [batch, seq_length]")
                    for name in inputs]
    with tf.control_dependencies(rank_asserts):
        # Read only once the ranks are known good: a rank-1 tensor has no dimension 1, and shapes of two ranks
        # cannot be compared.
        length = tf.shape(word_ids)[-1]
        shapes = {name: tf.identity(tf.shape(inputs[name])) for name in ENCODER_INPUTS}
    asserts = list(rank_asserts)
    for name in ENCODER_INPUTS[1:]:
        asserts.append(tf.debugging.assert_equal(
            shapes[name], shapes["input_word_ids"],
            message=f"{name} must have the shape of input_word_ids [batch, seq_length]"))
    asserts += [
        tf.debugging.assert_positive(
            length, message="input_word_ids has no tokens (seq_length 0): pack at least [CLS] into each sequence"),
        tf.debugging.assert_less_equal(
            length, limit,
            message=f"input_word_ids is longer than the max_position_embeddings={limit} of this model: truncate each "
                    f"sequence to at most {limit} tokens (the seq_length of the preprocessing model)"),
    ]
    asserts += _in_range("input_word_ids", word_ids, config.vocab_size,
                         f"an id >= vocab_size={config.vocab_size}: use the vocab exported with this model")
    asserts += _in_range("input_type_ids", inputs["input_type_ids"], config.type_vocab_size,
                         f"an id >= type_vocab_size={config.type_vocab_size}")
    if POSITIONS in inputs:
        asserts += _in_range(POSITIONS, inputs[POSITIONS], length,
                             "a position >= the sequence length of input_word_ids")
    return asserts


def checked_inputs(inputs, config):
    """`inputs` (a dict of the id tensors, and optionally `masked_lm_positions`) made to depend on
    `input_asserts`, so the checks fail before any model op reads a bad value.

    Example:
    >>> from bert_tf.config import BertConfig
    >>> ids = tf.constant([[101, 7592, 102]])
    >>> checked = checked_inputs({"input_word_ids": ids, "input_mask": tf.ones_like(ids),
    ...                           "input_type_ids": tf.zeros_like(ids)}, BertConfig(vocab_size=30522))
    >>> checked["input_word_ids"].numpy().tolist()
    [[101, 7592, 102]]
    """
    with tf.control_dependencies(input_asserts(inputs, config)):
        return {name: tf.identity(value) for name, value in inputs.items()}

"""The id-tensor specs of the serving signatures and the in-graph checks that make bad inputs fail clearly.

A serving graph cannot raise a Python error: a request with more tokens than the model has positions would
otherwise fail deep inside a slice (or, on GPU, read zeros and return garbage). These asserts run first and name
the limit.
"""

import tensorflow as tf

from bert_tf.modeling.encoder import ENCODER_INPUTS


def id_specs(names=ENCODER_INPUTS):
    """int32 [batch, seq_length] specs, both dimensions free, named as the inputs of the TF Hub BERT API."""
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in names}


def check_encoder_inputs(inputs, config):
    """Asserts (graph ops) that the three id tensors have one shape, at most `max_position_embeddings` tokens,
    and ids inside the vocab and segment tables. Returns the asserts, to run before the model."""
    word_ids = inputs["input_word_ids"]
    length = tf.shape(word_ids)[1]
    limit = config.max_position_embeddings
    return [
        tf.debugging.assert_equal(
            tf.shape(inputs["input_mask"]), tf.shape(word_ids),
            message="input_mask must have the shape of input_word_ids [batch, seq_length]"),
        tf.debugging.assert_equal(
            tf.shape(inputs["input_type_ids"]), tf.shape(word_ids),
            message="input_type_ids must have the shape of input_word_ids [batch, seq_length]"),
        tf.debugging.assert_less_equal(
            length, limit,
            message=f"input_word_ids is longer than the max_position_embeddings={limit} of this model: truncate each "
                    f"sequence to at most {limit} tokens (the seq_length of the preprocessing model)"),
        tf.debugging.assert_less(
            tf.reduce_max(tf.concat([[0], tf.reshape(word_ids, [-1])], 0)), config.vocab_size,
            message=f"input_word_ids holds an id >= vocab_size={config.vocab_size}: use the vocab exported with "
                    f"this model"),
        tf.debugging.assert_less(
            tf.reduce_max(tf.concat([[0], tf.reshape(inputs["input_type_ids"], [-1])], 0)), config.type_vocab_size,
            message=f"input_type_ids holds an id >= type_vocab_size={config.type_vocab_size}"),
    ]


def check_positions(masked_lm_positions, seq_length):
    """Asserts that every masked-LM position indexes a token of the sequence."""
    return tf.debugging.assert_less(
        tf.reduce_max(tf.concat([[0], tf.reshape(masked_lm_positions, [-1])], 0)), seq_length,
        message="masked_lm_positions holds a position >= the sequence length of input_word_ids")

"""Unmasked instances from tokenized documents, built inside tf.data (for dynamic masking).

A window of documents (int token ids, RaggedTensor [documents, (sentences), (tokens)]; every document with a
sentence, every sentence with a token) becomes padded instances
{input_word_ids, input_mask, input_type_ids [N, T], next_sentence_labels [N, 1]} in one of two ways:

- `next_sentence_instances`: the original `create_instances_from_document` and `truncate_seq_pair`, as the
  `SentencePairRules` of bert_tf/instances/sentence_pairs.py describe them (a target length per document, sentences
  accumulated into a chunk, a random split point, a random next segment (label 1) with random_next_prob and always
  for a one-sentence chunk, with the unused sentences put back, then truncation). The one difference: the random
  next segment comes from a document of the same window, not of the whole corpus, since a stream has no random
  access to the corpus.
- `full_sentence_instances` (RoBERTa FULL-SENTENCES, no NSP): contiguous sentences packed up to max_seq_length,
  crossing document boundaries with an extra [SEP]; a sentence longer than a sequence is cut into pieces.

Two executions, one owner: bert_tf/instances/sentence_pairs.py runs the same `SentencePairRules` offline,
replaying the original's `random.Random` draws so that its pairs are the original's for the same documents and
generator state. Here
every document of a window advances at once and every draw is stateless, from the window's seed, so instances are
reproducible and resumable; the two agree in distribution (tests/test_sentence_pair_rules.py). Every number comes
from the rules and the truncation's cut lengths from `text/packing.pair_keep_lengths`, as offline.
"""

import tensorflow as tf

from bert_tf.text.packing import pack_spans_in_graph, pair_keep_lengths


def next_sentence_instances(window, rules, cls_id, sep_id, seed):
    """The original NSP instances of every document of `window` (int32 ragged [D, (S), (T)]) under `rules` (a
    `SentencePairRules`), seeded by `seed`.

    Example:
    >>> from bert_tf.instances.sentence_pairs import SentencePairRules
    >>> window = tf.ragged.constant([[[5, 6, 7], [8, 9]], [[10, 11], [12], [13, 14, 15]]], tf.int32)
    >>> out = next_sentence_instances(window, SentencePairRules(max_seq_length=16), cls_id=1, sep_id=2,
    ...                               seed=tf.constant([0, 1], tf.int64))
    >>> out["input_word_ids"].shape[1], sorted(out)
    (16, ['input_mask', 'input_type_ids', 'input_word_ids', 'next_sentence_labels'])
    """
    window = tf.cast(window, tf.int32)
    max_num_tokens = rules.max_num_tokens
    num_docs = window.nrows(out_type=tf.int32)
    doc_starts = tf.cast(window.row_splits, tf.int32)  # first global sentence of each document
    num_sentences = doc_starts[1:] - doc_starts[:-1]
    token_starts = tf.cast(window.values.row_splits, tf.int32)  # first flat token of each global sentence
    target_seed, loop_seed, truncate_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))

    # The original draws one target length per document.
    draws = tf.random.stateless_uniform([num_docs, 2], target_seed)
    short = rules.min_target_length + _randint(draws[:, 1], max_num_tokens - rules.min_target_length + 1)
    target = tf.where(draws[:, 0] < rules.short_seq_prob, short, max_num_tokens)
    # The original's tries at a random document other than the chunk's own, in closed form.
    same_document = rules.same_document_probability(tf.cast(num_docs, tf.float32))
    last = tf.size(token_starts) - 1

    def token_start(sentence):  # clipped: documents already done compute on, but never emit, stale indices
        return tf.gather(token_starts, tf.clip_by_value(sentence, 0, last))

    def step(iteration, i, chunk_start, chunk_tokens, outputs):
        active = i < num_sentences
        sentence = doc_starts[:-1] + i
        length = token_start(sentence + 1) - token_start(sentence)
        chunk_tokens = chunk_tokens + tf.where(active, length, 0)
        emit = active & ((i == num_sentences - 1) | (chunk_tokens >= target))

        u = tf.random.stateless_uniform([num_docs, 5], tf.random.experimental.stateless_fold_in(loop_seed, iteration))
        chunk_size = i - chunk_start + 1
        a_end = tf.where(chunk_size >= 2, 1 + _randint(u[:, 0], chunk_size - 1), 1)
        is_random_next = (chunk_size == 1) | (u[:, 1] < rules.random_next_prob)
        first = doc_starts[:-1] + chunk_start
        a_start_token, a_stop_token = token_start(first), token_start(first + a_end)

        # Random next: sentences of a random document from a random start until the target is reached.
        other = tf.where(u[:, 4] < same_document, tf.range(num_docs),
                         (tf.range(num_docs) + 1 + _randint(u[:, 2], num_docs - 1)) % num_docs)
        random_start = tf.gather(doc_starts, other) + _randint(u[:, 3], tf.gather(num_sentences, other))
        target_b = target - (a_stop_token - a_start_token)
        random_stop = tf.clip_by_value(
            tf.searchsorted(token_starts, token_start(random_start) + target_b, side="left", out_type=tf.int32),
            random_start + 1, tf.gather(doc_starts, other + 1))
        b_start_token = tf.where(is_random_next, token_start(random_start), a_stop_token)
        b_stop_token = tf.where(is_random_next, token_start(random_stop), token_start(sentence + 1))

        outputs = [ta.write(iteration, value) for ta, value in zip(outputs, (
            emit, a_start_token, a_stop_token, b_start_token, b_stop_token, tf.cast(is_random_next, tf.int32)))]
        # After a random next, the chunk's unused sentences are put back (the original's i -= unused).
        next_i = tf.where(emit & is_random_next, chunk_start + a_end, i + 1)
        next_i = tf.where(active, next_i, i)
        chunk_start = tf.where(emit, next_i, chunk_start)
        chunk_tokens = tf.where(emit, 0, chunk_tokens)
        return iteration + 1, next_i, chunk_start, chunk_tokens, outputs

    zeros = tf.zeros([num_docs], tf.int32)
    arrays = [tf.TensorArray(dtype, size=0, dynamic_size=True, element_shape=[None])
              for dtype in (tf.bool, tf.int32, tf.int32, tf.int32, tf.int32, tf.int32)]
    _, _, _, _, arrays = tf.while_loop(
        lambda iteration, i, *_: tf.reduce_any(i < num_sentences), step, (0, zeros, zeros, zeros, arrays))
    emitted, a_start, a_stop, b_start, b_stop, labels = (tf.reshape(a.stack(), [-1]) for a in arrays)
    a_start, a_stop, b_start, b_stop, labels = (tf.boolean_mask(t, emitted) for t in (a_start, a_stop, b_start,
                                                                                     b_stop, labels))
    a_start, a_stop, b_start, b_stop = truncate_pairs(a_start, a_stop, b_start, b_stop, rules, truncate_seed)
    ids, input_mask, type_ids = pack_spans_in_graph(window.flat_values, a_start, a_stop, rules.max_seq_length, cls_id,
                                                    sep_id, b_start=b_start, b_stop=b_stop)
    return {"input_word_ids": ids, "input_mask": input_mask, "input_type_ids": type_ids,
            "next_sentence_labels": labels[:, tf.newaxis]}


def full_sentence_instances(window, max_seq_length, cls_id, sep_id):
    """RoBERTa FULL-SENTENCES sequences from `window` (int32 ragged [D, (S), (T)]): [CLS] s1 s2 .. [SEP], an
    extra [SEP] where a document ends inside a sequence; segment ids and next_sentence_labels 0.

    Example:
    >>> window = tf.ragged.constant([[[5, 6, 7], [8, 9]], [[10, 11]]], tf.int32)
    >>> full_sentence_instances(window, 10, cls_id=1, sep_id=2)["input_word_ids"].numpy().tolist()
    [[1, 5, 6, 7, 8, 9, 2, 10, 11, 2]]
    """
    window = tf.cast(window, tf.int32)
    capacity = max_seq_length - 2  # room between [CLS] and the final [SEP]
    sentences = window.values  # [S, (T)]
    doc_first = tf.scatter_nd(tf.cast(window.row_splits[:-1], tf.int32)[:, tf.newaxis],
                              tf.ones([window.nrows(out_type=tf.int32)], tf.int32), [sentences.nrows(tf.int32)])
    doc_first = doc_first > 0
    # Sentences longer than a sequence are cut into pieces of `capacity` tokens.
    lengths = tf.cast(sentences.row_lengths(), tf.int32)
    pieces_per_sentence = (lengths + capacity - 1) // capacity
    piece_index = tf.ragged.range(pieces_per_sentence)
    sentence_of_piece = tf.cast(piece_index.value_rowids(), tf.int32)
    piece_start = tf.gather(tf.cast(sentences.row_splits[:-1], tf.int32), sentence_of_piece) \
        + capacity * piece_index.flat_values
    piece_stop = tf.minimum(piece_start + capacity, tf.gather(tf.cast(sentences.row_splits[1:], tf.int32),
                                                              sentence_of_piece))
    starts_document = tf.gather(doc_first, sentence_of_piece) & tf.equal(piece_index.flat_values, 0)
    piece_lengths = piece_stop - piece_start

    # Greedy packing: a sequence starting at piece s takes pieces up to the last that fits. With each piece's
    # cost = its length + 1 if it starts a document (the [SEP] before it, dropped when it opens a sequence),
    # the end of every possible sequence is one searchsorted over the running cost; only the chain of actual
    # sequence starts (0, end(0), end(end(0)), ...) is followed one step at a time.
    num_pieces = tf.size(piece_lengths)
    separator = tf.cast(starts_document, tf.int32)
    running = tf.concat([[0], tf.cumsum(piece_lengths + separator)], axis=0)
    end = tf.searchsorted(running, running[:-1] + separator + capacity, side="right", out_type=tf.int32) - 1
    end = tf.concat([end, [num_pieces]], axis=0)

    def follow(start, starts):
        return end[start], starts.write(starts.size(), start)

    _, sequence_starts = tf.while_loop(lambda start, _: start < num_pieces, follow,
                                       (0, tf.TensorArray(tf.int32, size=0, dynamic_size=True)))
    opens_sequence = tf.scatter_nd(sequence_starts.stack()[:, tf.newaxis], tf.ones_like(sequence_starts.stack()),
                                   [num_pieces]) > 0
    sequence_of_piece = tf.cumsum(tf.cast(opens_sequence, tf.int32)) - 1
    separator_before = separator * tf.cast(tf.logical_not(opens_sequence), tf.int32)

    tokens = tf.RaggedTensor.from_row_lengths(  # each piece, preceded by [SEP] if it starts a new document inside
        tf.gather(sentences.flat_values, tf.ragged.range(piece_start, piece_stop).flat_values), piece_lengths)
    separators = tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(separator_before)], sep_id),
                                                  separator_before)
    tokens = tf.concat([separators, tokens], axis=1)
    packed = tf.RaggedTensor.from_value_rowids(tokens, sequence_of_piece).merge_dims(1, 2)
    count = packed.nrows(out_type=tf.int32)
    packed = tf.concat([tf.fill([count, 1], cls_id), packed, tf.fill([count, 1], sep_id)], axis=1)
    ids = packed.to_tensor(shape=[None, max_seq_length])
    input_mask = tf.cast(tf.sequence_mask(packed.row_lengths(), max_seq_length), tf.int32)
    return {"input_word_ids": ids, "input_mask": input_mask, "input_type_ids": tf.zeros_like(ids),
            "next_sentence_labels": tf.zeros([count, 1], tf.int32)}


def _randint(uniform, n):
    """Uniform integers in [0, n) from uniforms in [0, 1) (0 where n <= 0)."""
    return tf.minimum(tf.cast(tf.floor(uniform * tf.cast(n, tf.float32)), tf.int32), tf.maximum(n - 1, 0))


def truncate_pairs(a_start, a_stop, b_start, b_stop, rules, seed):
    """The original truncate_seq_pair on int32 span tensors [N] (A = [a_start, a_stop), B likewise), in closed
    form: each side loses what `pair_keep_lengths` says, and the tokens it loses at the front are
    Binomial(losses, rules.front_cut_prob), from the stateless `seed` -> the four cut span tensors.

    Example:
    >>> from bert_tf.instances.sentence_pairs import SentencePairRules
    >>> spans = truncate_pairs(tf.constant([0]), tf.constant([6]), tf.constant([10]), tf.constant([13]),
    ...                        SentencePairRules(max_seq_length=8), tf.constant([0, 1], tf.int64))
    >>> a_start, a_stop, b_start, b_stop = (int(t[0]) for t in spans)
    >>> a_stop - a_start, b_stop - b_start
    (3, 2)
    """
    a, b = a_stop - a_start, b_stop - b_start
    a_new, b_new = pair_keep_lengths(a, b, rules.max_num_tokens)
    cut_a, cut_b = a - a_new, b - b_new
    seed_a, seed_b = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    front_a, front_b = (
        tf.cast(tf.random.stateless_binomial(tf.shape(cut), side_seed, tf.cast(cut, tf.float32), rules.front_cut_prob,
                                             output_dtype=tf.int32), tf.int32)
        for cut, side_seed in ((cut_a, seed_a), (cut_b, seed_b)))
    return (a_start + front_a, a_stop - (cut_a - front_a), b_start + front_b, b_stop - (cut_b - front_b))

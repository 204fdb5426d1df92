"""Dynamic masking (RoBERTa's option): the original masking rules drawn again for every batch, inside tf.data.

The rules are the `MaskingRules` of the original `create_masked_lm_predictions` (bert_tf/instances/masking.py
describes them and holds the reference): [CLS], [SEP] and [PAD] are never candidates; num_to_predict =
min(max_predictions_per_seq, max(1, round(len * masked_lm_prob))) with len counting the special tokens; with whole-word
masking a "##" piece joins the previous candidate's word and a word that would exceed the budget is skipped; each chosen
token is [MASK] 80% of the time, kept 10%, a random token of the whole vocab 10%; positions come out sorted. Records
that carry a word segmenter's groups (`word_starts`, records/word_starts.py) are grouped by them instead of by "##"
pieces (a record without them, or with all 0, by "##" pieces).

Two ops are written here instead of taken from tensorflow-text: its `RandomItemSelector` selects
ceil(rate * selectable items) with the budget counted in words, not the original's rounded count over all tokens
with a token budget; its `MaskValuesChooser` draws from stateful RNG ops, so its masks could neither be
reproduced from a seed nor resumed from an iterator checkpoint (here every draw is stateless, from a per-batch
seed).
"""

import tensorflow as tf

from bert_tf.instances.masking import MaskingRules
from bert_tf.records.word_starts import WORD_STARTS_FEATURE
from bert_tf.text.vocabulary import MASKING_TOKENS, Vocabulary


class DynamicMasker:
    """Masks batches of unmasked instances with the original rules, from a stateless seed per batch.

    Args:
        vocab: a `Vocabulary`, a vocab file's path or its tokens in id order (needs [PAD], [CLS], [SEP], [MASK];
            "##" marks word pieces for whole-word masking).
        masked_lm_prob: the share of tokens to predict (original default 0.15).
        do_whole_word_mask: mask whole words ("##" pieces with the piece before them).

    Example:
    >>> masker = DynamicMasker(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"], masked_lm_prob=0.15)
    >>> ids = tf.constant([[2, 5, 6, 5, 3, 6, 3, 0]])
    >>> features = {"input_word_ids": ids, "input_mask": tf.cast(ids > 0, tf.int32),
    ...             "input_type_ids": tf.zeros_like(ids), "next_sentence_labels": tf.constant([[0]])}
    >>> out = masker.mask_batch(features, max_predictions_per_seq=2, seed=tf.constant([1, 0], tf.int64))
    >>> out["masked_lm_weights"].numpy().tolist()  # round(7 * 0.15) = 1 prediction
    [[1.0, 0.0]]
    """

    def __init__(self, vocab, masked_lm_prob=0.15, do_whole_word_mask=False):
        self.vocabulary = Vocabulary.of(vocab).require(MASKING_TOKENS, "dynamic masking")
        # max_predictions_per_seq is the pipeline's, given to each call.
        self.rules = MaskingRules(float(masked_lm_prob), do_whole_word_mask=bool(do_whole_word_mask))
        self.vocab = list(self.vocabulary.tokens)
        self.vocab_size = self.vocabulary.size
        self.pad_id, self.cls_id, self.sep_id, self.mask_id = (self.vocabulary.id_of(t) for t in MASKING_TOKENS)
        self._is_subword = tf.constant(self.vocabulary.is_subword, tf.bool)

    def mask_batch(self, features, max_predictions_per_seq, seed):
        """Unmasked features (input_word_ids, input_mask, input_type_ids [B, T], next_sentence_labels [B, 1]; and
        optionally word_starts [B, T]) -> the full pre-training feature dict of the static path, masks drawn from
        `seed` (int64 [2])."""
        ids = tf.convert_to_tensor(features["input_word_ids"], tf.int32)
        input_mask = tf.cast(features["input_mask"], tf.int32)
        batch, seq_len = tf.shape(ids)[0], tf.shape(ids)[1]
        num_predictions = max_predictions_per_seq
        select_seed, value_seed, token_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))

        special = (tf.equal(ids, self.cls_id) | tf.equal(ids, self.sep_id) | tf.equal(ids, self.pad_id))
        candidate = tf.equal(input_mask, 1) & tf.logical_not(special)
        lengths = tf.reduce_sum(input_mask, axis=1)
        # Python's round() on the same double: both round half to even.
        budget = tf.cast(tf.round(tf.cast(lengths, tf.float64) * self.rules.masked_lm_prob), tf.int32)
        budget = tf.minimum(num_predictions, tf.maximum(1, budget))

        if self.rules.do_whole_word_mask:
            selected = self._select_whole_words(ids, candidate, budget, select_seed,
                                                features.get(WORD_STARTS_FEATURE))
        else:
            selected = self._select_tokens(candidate, budget, num_predictions, select_seed)

        # The selected positions in increasing order, padded with seq_len (top_k of the negated positions).
        position_or_end = tf.where(selected, tf.range(seq_len)[tf.newaxis, :], seq_len)
        positions = -tf.math.top_k(-position_or_end, k=num_predictions, sorted=True).values
        is_real = positions < seq_len
        positions = tf.where(is_real, positions, 0)
        labels = tf.where(is_real, tf.gather(ids, positions, batch_dims=1), 0)

        draw = tf.random.stateless_uniform([batch, num_predictions], value_seed)
        random_tokens = tf.random.stateless_uniform([batch, num_predictions], token_seed, minval=0,
                                                    maxval=self.vocab_size, dtype=tf.int32)
        values = tf.where(draw < self.rules.mask_below, self.mask_id,
                          tf.where(draw < self.rules.keep_below, labels, random_tokens))
        # Adding (new - old) leaves the padding entries (all at position 0, delta 0) harmless.
        delta = tf.where(is_real, values - labels, 0)
        indices = tf.stack([tf.broadcast_to(tf.range(batch)[:, tf.newaxis], tf.shape(positions)), positions], -1)
        masked_ids = tf.tensor_scatter_nd_add(ids, tf.reshape(indices, [-1, 2]), tf.reshape(delta, [-1]))
        return {
            "input_word_ids": masked_ids,
            "input_mask": input_mask,
            "input_type_ids": tf.cast(features["input_type_ids"], tf.int32),
            "masked_lm_positions": positions,
            "masked_lm_ids": labels,
            "masked_lm_weights": tf.cast(is_real, tf.float32),
            "next_sentence_labels": tf.cast(features["next_sentence_labels"], tf.int32),
        }

    def mask_batches(self, batches, max_predictions_per_seq, seed, num_parallel_calls=tf.data.AUTOTUNE):
        """A dataset of unmasked batches -> masked ones; batch i is masked from the stateless seed [seed, i].

        The counter runs on across epochs (new masks each epoch) and is part of an iterator checkpoint (a
        resumed run draws the masks it would have drawn).

        Example:
        >>> batches = tf.data.Dataset.from_tensor_slices(features).batch(32, drop_remainder=True)  # doctest: +SKIP
        >>> masked = masker.mask_batches(batches, max_predictions_per_seq=20, seed=1)  # doctest: +SKIP
        """
        seed = tf.constant(seed, tf.int64)

        def mask(index, features):
            return self.mask_batch(features, max_predictions_per_seq, tf.stack([seed, index]))

        return batches.enumerate().map(mask, num_parallel_calls=num_parallel_calls, deterministic=True)

    def _select_tokens(self, candidate, budget, num_predictions, seed):
        """A uniformly random subset of min(budget, candidates) candidate tokens per row."""
        keys = tf.where(candidate, tf.random.stateless_uniform(tf.shape(candidate), seed), 2.0)
        k = tf.minimum(num_predictions, tf.shape(candidate)[1])
        chosen = tf.math.top_k(-keys, k=k, sorted=True).indices  # the k smallest keys, in shuffled order
        take = (tf.range(k)[tf.newaxis, :] < budget[:, tf.newaxis]) & tf.gather(candidate, chosen, batch_dims=1)
        return _scatter_rows(chosen, take, tf.shape(candidate))

    def _select_whole_words(self, ids, candidate, budget, seed, word_starts=None):
        """The original's greedy pass over shuffled words: a word that would exceed the budget is skipped."""
        seq_len = tf.shape(ids)[1]
        # As in the original, a "##" piece joins the previous candidate's word, even across a [SEP]; with word
        # starts, a token joins it unless it starts a group (`StaticMasker.continues_word`, the same rule).
        is_piece = tf.gather(self._is_subword, ids)
        if word_starts is not None:
            given = tf.cast(word_starts, tf.int32) > 0
            is_piece = tf.where(tf.reduce_any(given, axis=1, keepdims=True), tf.logical_not(given), is_piece)
        is_piece &= candidate
        earlier_candidate = tf.cumsum(tf.cast(candidate, tf.int32), axis=1, exclusive=True) > 0
        starts = candidate & tf.logical_not(is_piece & earlier_candidate)
        word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # the word of each candidate token
        num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)
        word_or_end = tf.where(candidate, word, seq_len)  # non-candidates go to an extra, dropped slot
        batch = tf.shape(ids)[0]
        row_offsets = tf.range(batch)[:, tf.newaxis] * (seq_len + 1)
        sizes = tf.math.unsorted_segment_sum(tf.ones_like(ids), word_or_end + row_offsets, batch * (seq_len + 1))
        sizes = tf.reshape(sizes, [batch, seq_len + 1])[:, :seq_len]

        word_slots = tf.range(seq_len)[tf.newaxis, :]
        keys = tf.where(word_slots < num_words[:, tf.newaxis], tf.random.stateless_uniform(tf.shape(ids), seed), 2.0)
        order = tf.argsort(keys, axis=1)  # words in shuffled order, then the empty slots
        ordered_sizes = tf.gather(sizes, order, batch_dims=1)  # 0 for the empty slots
        is_word = ordered_sizes > 0

        # The original walks the shuffled words one by one, taking each that fits the remaining budget. Here a
        # phase takes, among the words from `start` no larger than the remaining budget, the longest prefix that
        # fits; the first one that does not fit is the original's first skip, and the next phase starts after it
        # with what is left. Every phase takes a word and lowers the budget, so a few phases replace the walk.
        def phase(remaining, start, taken):
            fits_alone = is_word & (word_slots >= start[:, tf.newaxis]) & (ordered_sizes <= remaining[:, tf.newaxis])
            running = tf.cumsum(tf.where(fits_alone, ordered_sizes, 0), axis=1)
            take = fits_alone & (running <= remaining[:, tf.newaxis])
            skipped = fits_alone & (running > remaining[:, tf.newaxis])
            first_skip = tf.where(tf.reduce_any(skipped, axis=1),
                                  tf.argmax(tf.cast(skipped, tf.int32), axis=1, output_type=tf.int32), seq_len)
            remaining -= tf.reduce_sum(tf.where(take, ordered_sizes, 0), axis=1)
            return remaining, first_skip + 1, taken | take

        def unfinished(remaining, start, taken):
            return tf.reduce_any((remaining > 0) & (start < seq_len))

        _, _, taken = tf.while_loop(unfinished, phase, (budget, tf.zeros_like(budget), tf.zeros_like(candidate)))
        word_taken = _scatter_rows(order, taken, tf.shape(ids))  # taken is indexed by ordered slot
        return candidate & tf.gather(word_taken, tf.maximum(word, 0), batch_dims=1)

    def unmasked_features(self, features):
        """Records' features -> the four unmasked ones `mask_batch` takes; static masks in them are undone.

        Missing features are filled in: input_mask from ids != [PAD], input_type_ids and next_sentence_labels 0;
        word_starts is kept when present.
        """
        ids = tf.cast(features["input_word_ids"], tf.int32)
        if "masked_lm_positions" in features and "masked_lm_ids" in features:
            positions = tf.cast(features["masked_lm_positions"], tf.int32)
            real = tf.cast(features["masked_lm_weights"], tf.float32) > 0 if "masked_lm_weights" in features \
                else tf.not_equal(positions, 0)
            original = tf.cast(features["masked_lm_ids"], tf.int32)
            delta = tf.where(real, original - tf.gather(ids, positions, batch_dims=1), 0)
            rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, tf.newaxis], tf.shape(positions))
            ids = tf.tensor_scatter_nd_add(ids, tf.reshape(tf.stack([rows, positions], -1), [-1, 2]),
                                           tf.reshape(delta, [-1]))
        batch = tf.shape(ids)[0]
        input_mask = features.get("input_mask")
        input_mask = tf.cast(tf.not_equal(ids, self.pad_id), tf.int32) if input_mask is None else input_mask
        types = features.get("input_type_ids")
        labels = features.get("next_sentence_labels")
        unmasked = {
            "input_word_ids": ids,
            "input_mask": tf.cast(input_mask, tf.int32),
            "input_type_ids": tf.zeros_like(ids) if types is None else tf.cast(types, tf.int32),
            "next_sentence_labels": (tf.zeros([batch, 1], tf.int32) if labels is None
                                     else tf.reshape(tf.cast(labels, tf.int32), [batch, 1])),
        }
        if WORD_STARTS_FEATURE in features:
            unmasked[WORD_STARTS_FEATURE] = tf.cast(features[WORD_STARTS_FEATURE], tf.int32)
        return unmasked


def _scatter_rows(columns, values, shape):
    """A [B, T] bool mask, True at (b, columns[b, j]) where values[b, j]; the columns of a row are distinct."""
    rows = tf.broadcast_to(tf.range(shape[0])[:, tf.newaxis], tf.shape(columns))
    indices = tf.reshape(tf.stack([rows, columns], -1), [-1, 2])
    return tf.scatter_nd(indices, tf.reshape(tf.cast(values, tf.int32), [-1]), shape) > 0

"""Packed rows inside tf.data: unpacked records packed on the way in, and packed rows masked again per instance.

The rule of which instances share a row is `instances/best_fit_rows.py`'s (best-fit decreasing, longest first, at
most K instances and P_row prediction slots a row); here it runs as TensorFlow ops on a window of records, so it
sits in a tf.data graph, is deterministic and resumes exactly from an iterator checkpoint (no Python state, no
stateful op). The layout of a row is `records/packed_rows.py`'s; `place_instances` writes it with the model's
feature names.
"""

import tensorflow as tf

from bert_tf.records.word_starts import WORD_STARTS_FEATURE


def assign_rows(lengths, prediction_counts, layout):
    """Best-fit decreasing as `bert_tf.instances.best_fit_rows.assign_rows`, in TensorFlow ops: lengths and
    prediction counts [N] -> (row_of, slot_of, start_of, prediction_start_of [N], num_rows), all int32."""
    lengths = tf.cast(lengths, tf.int32)
    prediction_counts = tf.cast(prediction_counts, tf.int32)
    count = tf.shape(lengths)[0]
    seq_len, max_slots, max_predictions = (layout.max_seq_length, layout.max_instances_per_row,
                                           layout.max_predictions_per_row)
    order = tf.argsort(-lengths, stable=True)
    rows = tf.range(count)
    zeros = tf.zeros([count], tf.int32)

    def place(i, used_tokens, used_predictions, used_slots, num_rows, row_of, slot_of, start_of, prediction_start_of):
        n = order[i]
        length, predictions = lengths[n], prediction_counts[n]
        fits = ((rows < num_rows) & (used_slots < max_slots) & (seq_len - used_tokens >= length) &
                (used_predictions + predictions <= max_predictions))
        # The least room left, then the row opened first.
        key = tf.where(fits, (seq_len - used_tokens) * count + rows, (seq_len + 1) * count)
        row = tf.where(tf.reduce_any(fits), tf.argmin(key, output_type=tf.int32), num_rows)

        def at(values, value):
            return tf.tensor_scatter_nd_update(values, [[n]], [value])

        def add(values, amount):
            return tf.tensor_scatter_nd_add(values, [[row]], [amount])

        row_of, slot_of = at(row_of, row), at(slot_of, used_slots[row])
        start_of, prediction_start_of = at(start_of, used_tokens[row]), at(prediction_start_of, used_predictions[row])
        return (i + 1, add(used_tokens, length), add(used_predictions, predictions), add(used_slots, 1),
                tf.maximum(num_rows, row + 1), row_of, slot_of, start_of, prediction_start_of)

    state = (0, zeros, zeros, zeros, 0, zeros, zeros, zeros, zeros)
    _, _, _, _, num_rows, row_of, slot_of, start_of, prediction_start_of = tf.while_loop(
        lambda i, *_: i < count, place, state)
    return row_of, slot_of, start_of, prediction_start_of, num_rows


def place_instances(instances, row_of, slot_of, start_of, prediction_start_of, num_rows, layout):
    """Instances (model names, [N, <=T] and [N, P], labels [N, 1]) -> packed rows [num_rows, ...] with the
    model's names: the layout of `records/packed_rows.assemble_rows`, positions and instance ids included."""
    seq_len = layout.max_seq_length
    mask = tf.cast(instances["input_mask"], tf.int32)
    lengths = tf.reduce_sum(mask, axis=1)
    token = tf.cast(tf.where(tf.range(tf.shape(mask)[1])[tf.newaxis, :] < lengths[:, tf.newaxis]), tf.int32)
    n, t = token[:, 0], token[:, 1]
    where = tf.stack([tf.gather(row_of, n), tf.gather(start_of, n) + t], axis=1)

    def tokens(values):
        return tf.scatter_nd(where, values, [num_rows, seq_len])

    rows = {name: tokens(tf.gather_nd(tf.cast(instances[name], tf.int32), token))
            for name in ("input_word_ids", "input_mask", "input_type_ids")}
    rows["input_position_ids"] = tokens(t)
    rows["input_instance_ids"] = tokens(tf.gather(slot_of, n) + 1)

    weights = tf.cast(instances["masked_lm_weights"], tf.float32) > 0
    prediction = tf.cast(tf.where(weights), tf.int32)
    n, q = prediction[:, 0], prediction[:, 1]
    where = tf.stack([tf.gather(row_of, n), tf.gather(prediction_start_of, n) + q], axis=1)
    shape = [num_rows, layout.max_predictions_per_row]
    positions = tf.gather_nd(tf.cast(instances["masked_lm_positions"], tf.int32), prediction) + tf.gather(start_of, n)
    rows["masked_lm_positions"] = tf.scatter_nd(where, positions, shape)
    rows["masked_lm_ids"] = tf.scatter_nd(where, tf.gather_nd(tf.cast(instances["masked_lm_ids"], tf.int32),
                                                              prediction), shape)
    rows["masked_lm_weights"] = tf.scatter_nd(where, tf.ones([tf.shape(n)[0]], tf.float32), shape)

    where = tf.stack([row_of, slot_of], axis=1)
    shape = [num_rows, layout.max_instances_per_row]
    rows["next_sentence_positions"] = tf.scatter_nd(where, start_of, shape)
    labels = tf.reshape(tf.cast(instances["next_sentence_labels"], tf.int32), [-1])
    rows["next_sentence_labels"] = tf.scatter_nd(where, labels, shape)
    rows["next_sentence_weights"] = tf.scatter_nd(where, tf.ones_like(labels, tf.float32), shape)
    return rows


def pack_instances(instances, layout):
    """A window of unpacked instances (model names) -> the packed rows they fill, rows in the order opened."""
    lengths = tf.reduce_sum(tf.cast(instances["input_mask"], tf.int32), axis=1)
    counts = tf.reduce_sum(tf.cast(tf.cast(instances["masked_lm_weights"], tf.float32) > 0, tf.int32), axis=1)
    row_of, slot_of, start_of, prediction_start_of, num_rows = assign_rows(lengths, counts, layout)
    return place_instances(instances, row_of, slot_of, start_of, prediction_start_of, num_rows, layout)


def split_rows(rows, layout):
    """Packed rows [B, ...] (model names) -> (their instances' unmasked-looking features input_word_ids,
    input_mask, input_type_ids (and word_starts when the rows have it) [B * K, T] and next_sentence_labels
    [B * K, 1], with empty slots as empty
    instances; the row of each, its slot and its first token)."""
    batch = tf.shape(rows["input_word_ids"])[0]
    seq_len, slots = layout.max_seq_length, layout.max_instances_per_row
    instance_ids = tf.cast(rows["input_instance_ids"], tf.int32)
    slot_numbers = tf.range(1, slots + 1)
    lengths = tf.reduce_sum(tf.cast(instance_ids[:, tf.newaxis, :] == slot_numbers[tf.newaxis, :, tf.newaxis],
                                    tf.int32), axis=2)                                     # [B, K]
    starts = tf.cast(rows["next_sentence_positions"], tf.int32)
    t = tf.range(seq_len)
    real = t[tf.newaxis, tf.newaxis, :] < lengths[:, :, tf.newaxis]                       # [B, K, T]
    source = tf.where(real, starts[:, :, tf.newaxis] + t, 0)
    token_features = ("input_word_ids", "input_mask", "input_type_ids") + tuple(
        name for name in (WORD_STARTS_FEATURE,) if name in rows)
    instances = {name: tf.reshape(tf.where(real, tf.gather(tf.cast(rows[name], tf.int32), source, batch_dims=1), 0),
                                  [batch * slots, seq_len])
                 for name in token_features}
    instances["next_sentence_labels"] = tf.reshape(tf.cast(rows["next_sentence_labels"], tf.int32), [-1, 1])
    row_of = tf.repeat(tf.range(batch), slots)
    slot_of = tf.tile(tf.range(slots), [batch])
    return instances, row_of, slot_of, tf.reshape(starts, [-1])


def mask_rows(masker, rows, layout, max_predictions_per_seq, seed):
    """Packed rows masked again by `masker` (a `DynamicMasker`), instance by instance: each instance's budget
    counts its own tokens and is capped at max_predictions_per_seq, as if it were a record of its own. Fails
    naming the fix when a row's new predictions exceed its slots (a higher masked_lm_prob than it was packed for)."""
    restored = masker.unmasked_features({name: rows[name] for name in ("input_word_ids", "masked_lm_positions",
                                                                       "masked_lm_ids", "masked_lm_weights")})
    rows = {**rows, "input_word_ids": restored["input_word_ids"]}
    instances, row_of, slot_of, start_of = split_rows(rows, layout)
    masked = masker.mask_batch(instances, max_predictions_per_seq, seed)
    present = tf.reshape(tf.cast(rows["next_sentence_weights"], tf.float32) > 0, [-1])
    counts = tf.reduce_sum(tf.cast(masked["masked_lm_weights"] > 0, tf.int32), axis=1)
    counts = tf.where(present, counts, 0)
    per_row = tf.reshape(counts, [-1, layout.max_instances_per_row])
    prediction_start_of = tf.reshape(tf.cumsum(per_row, axis=1, exclusive=True), [-1])
    check = tf.debugging.assert_less_equal(
        tf.reduce_max(tf.reduce_sum(per_row, axis=1)), layout.max_predictions_per_row,
        message=f"Dynamic masking drew more predictions for a packed row than its {layout.max_predictions_per_row} "
                f"slots: pack the rows for this masked_lm_prob (more max_predictions_per_row).")
    with tf.control_dependencies([check]):
        kept = {name: tf.boolean_mask(value, present) for name, value in masked.items()}
    packed = place_instances(kept, *(tf.boolean_mask(v, present) for v in (row_of, slot_of, start_of,
                                                                           prediction_start_of)),
                             tf.shape(rows["input_word_ids"])[0], layout)
    return packed

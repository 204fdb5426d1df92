"""The training input pipeline: original-format TFRecords -> batches of the model's feature dict.

Follows the original `run_pretraining.input_fn_builder` (files shuffled and repeated, records interleaved across
files, a shuffle buffer, `drop_remainder=True` batches so every shape is static for TPUs) with what a long run
needs on top: sharding per input pipeline (bert-pretrain runs one per host) from a `tf.distribute.InputContext`,
a seed that makes the order (and dynamic masks) reproducible, an iterator that `tf.train.Checkpoint` can save, and
errors that name the broken file and the shapes that do not match.
"""

import concurrent.futures
import random

import tensorflow as tf
from absl import logging

from bert_tf.errors import InputError
from bert_tf.inputs import rows_in_tf_data
from bert_tf.records import feature_spec as spec_lib
from bert_tf.records.checked_reading import checked_records, expected_record_bytes, join_message
from bert_tf.records.compression import detect_compression
from bert_tf.records.packed_rows import FORMAT_FEATURE
from bert_tf.records.schema import read_schema
from bert_tf.records.word_starts import WORD_STARTS_FEATURE
from bert_tf.text.file_patterns import expand_file_patterns

MODEL_FEATURES = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions", "masked_lm_ids",
                  "masked_lm_weights", "next_sentence_labels")
DEFAULT_CYCLE_LENGTH = 8
# Only these features are needed to mask on the fly; the rest are filled in when the records lack them.
_DYNAMIC_REQUIRED = ("input_ids",)
# Input set k (of several mixed) shuffles with seed + k * this: its own order, the first set's as without mixing.
_SET_SEED_STRIDE = 104_729


def pretraining_dataset(spec, input_context=None):
    """Batches of pre-training features read from TFRecords in the original format, as the `InputSpec` `spec` asks.

    Each element is a dict with the model's names: `input_word_ids`, `input_mask`, `input_type_ids` int32
    [batch_size, max_seq_length]; `masked_lm_positions`, `masked_lm_ids` int32 and `masked_lm_weights` float32
    [batch_size, max_predictions_per_seq]; `next_sentence_labels` int32 [batch_size, 1] (packed rows: see
    `InputSpec.row_layout`). Shapes are static (`drop_remainder=True`, also when `is_training` is False: a last
    partial batch is left out), unless `drop_remainder=False` (evaluation, which pads the last batch itself:
    `evaluation.evaluate`).

    input_context: a `tf.distribute.InputContext`; each pipeline then reads its own share: whole files when there
    are at least as many files as pipelines, else every n-th record of all files.

    Example:
    >>> ds = pretraining_dataset(InputSpec("out/wiki-*.tfrecord", 128, 20, batch_size=32, seed=1))  # doctest: +SKIP
    >>> batch = next(iter(ds))  # doctest: +SKIP
    >>> batch["input_word_ids"].shape, batch["masked_lm_weights"].dtype  # doctest: +SKIP
    (TensorShape([32, 128]), tf.float32)
    """
    seq, pred, batch_size, masker = spec.max_seq_length, spec.max_predictions_per_seq, spec.batch_size, spec.masker
    sets = [_set_files(patterns, spec.compression) for patterns in spec.input_sets]
    schema = _checked_schema(sets, spec.names, seq, pred, dynamic=masker is not None)

    pipeline_id = input_context.input_pipeline_id if input_context else 0
    seed = spec.seed
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 31)
        logging.info("pretraining_dataset: no seed given, drew seed=%d.", seed)
    num_parallel_calls = tf.data.AUTOTUNE if spec.num_parallel_calls is None else spec.num_parallel_calls
    records = _mixed_records(sets, spec, input_context, seed, num_parallel_calls)
    mask_seed = (seed * 1_000_003 + pipeline_id) % 2 ** 31
    parallel = dict(num_parallel_calls=num_parallel_calls, deterministic=True)
    drop_remainder = spec.drop_remainder
    if schema.packed:
        schema.check_packed(seq, spec.row_layout)
        batches = records.batch(batch_size, drop_remainder=drop_remainder).map(
            _packed_parser(schema, _reads_word_starts(masker)), **parallel)
        if masker is not None:
            layout = schema.row_layout
            batches = batches.enumerate().map(
                lambda index, rows: rows_in_tf_data.mask_rows(masker, rows, layout, pred,
                                                          tf.stack([tf.constant(mask_seed, tf.int64), index])),
                **parallel)
    elif spec.row_layout is not None:
        # Windows of instances, masked as records of their own, packed, and rows batched: `batch_size` counts rows.
        windows = records.batch(spec.packing_window, drop_remainder=spec.is_training)
        windows = windows.map(_batch_parser(schema, seq, pred, None, masker), **parallel)
        if masker is not None:
            windows = masker.mask_batches(windows, pred, mask_seed, num_parallel_calls=num_parallel_calls)
        rows = windows.map(lambda instances: rows_in_tf_data.pack_instances(instances, spec.row_layout), **parallel)
        batches = rows.unbatch().batch(batch_size, drop_remainder=drop_remainder)
    else:
        batches = records.batch(batch_size, drop_remainder=drop_remainder).map(
            _batch_parser(schema, seq, pred, batch_size if drop_remainder else None, masker), **parallel)
        if masker is not None:
            batches = masker.mask_batches(batches, pred, mask_seed, num_parallel_calls=num_parallel_calls)
    return batches.prefetch(tf.data.AUTOTUNE)


def _set_files(patterns, compression):
    """(files, their compressions, their expected record bytes) of one input set."""
    files = expand_file_patterns(patterns)
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(files))) as pool:
        compressions = list(pool.map(lambda f: detect_compression(f, compression), files))
        expected_bytes = list(pool.map(expected_record_bytes, files, compressions))
    return files, compressions, expected_bytes


def _checked_schema(sets, names, max_seq_length, max_predictions_per_seq, dynamic):
    """The records' schema, from each input set's first record checked against the lengths asked for (only
    input_ids, up to max_seq_length, when masks are drawn again); the sets must hold the same features."""
    schemas = []
    for files, compressions, _ in sets:
        schema = read_schema(files, compressions, names)
        schema.check(max_seq_length, max_predictions_per_seq, required=_DYNAMIC_REQUIRED if dynamic else None,
                     shorter_sequences=dynamic, masks=not dynamic)
        first = schemas[0] if schemas else schema
        if _form(schema) != _form(first) or (schema.packed and schema.row_layout != first.row_layout):
            raise InputError(f"The records of {schema.path} ({_form(schema)}) do not match those of {first.path} "
                             f"({_form(first)}): the input sets mixed in one phase must be written alike (the "
                             f"same names, features and lengths).")
        schemas.append(schema)
    return schemas[0]


def _form(schema):
    """The names, packing and features of a schema, for comparing and naming input sets. Optional features
    (word_starts) are left out: sets with and without them may be mixed."""
    required = [name for name in schema.length_of if name not in schema.optional_features]
    return (f"{schema.names} names, {'packed rows' if schema.packed else 'one instance per record'}, features "
            f"{sorted(schema.record_name(name) for name in required)}")


def _reads_word_starts(masker):
    """Whether the batches need the records' word starts: only whole-word dynamic masking groups by them."""
    return masker is not None and masker.rules.do_whole_word_mask


def _mixed_records(sets, spec, input_context, seed, num_parallel_calls):
    """This pipeline's (path, serialized record) pairs: the one input set's, or drawn from several at the spec's
    weights, each set read with its own seed."""
    per_set = [_pipeline_records(files, compressions, expected_bytes, input_context, spec,
                                 seed + k * _SET_SEED_STRIDE, num_parallel_calls)
               for k, (files, compressions, expected_bytes) in enumerate(sets)]
    if spec.weights is None:
        return per_set[0]
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    return tf.data.Dataset.sample_from_datasets(per_set, weights=[float(w) for w in spec.weights],
                                                seed=(seed * 1_000_033 + pipeline_id) % 2 ** 31)


def _pipeline_records(files, compressions, expected_bytes, input_context, spec, seed, num_parallel_calls):
    """(path, serialized record) pairs this pipeline reads: its own files when there are at least as many files as
    pipelines (else every n-th record of all), interleaved, and when training shuffled and repeated."""
    num_pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    file_ds = tf.data.Dataset.from_tensor_slices((files, compressions, tf.constant(expected_bytes, tf.int64)))
    shard_by_file = len(files) >= num_pipelines
    if not shard_by_file:
        logging.warning("%d input file(s) for %d input pipelines: every pipeline reads all of them and keeps every "
                        "%d-th record; write at least %d files (one or more per pipeline) so that each reads only "
                        "its own.", len(files), num_pipelines, num_pipelines, num_pipelines)
    files_here = len(range(pipeline_id, len(files), num_pipelines)) if shard_by_file else len(files)
    if shard_by_file and num_pipelines > 1:
        file_ds = file_ds.shard(num_pipelines, pipeline_id)
    is_training = spec.is_training
    if is_training and shard_by_file:
        file_ds = file_ds.shuffle(files_here, seed=seed, reshuffle_each_iteration=True).repeat()
    records = file_ds.interleave(
        checked_records, cycle_length=min(spec.cycle_length or DEFAULT_CYCLE_LENGTH, files_here), block_length=1,
        num_parallel_calls=num_parallel_calls, deterministic=True)
    if not shard_by_file:
        # Every pipeline reads all files in the same order and keeps every n-th record.
        records = records.shard(num_pipelines, pipeline_id)
        if is_training:
            records = records.repeat()
    if is_training:
        records = records.shuffle(spec.shuffle_buffer, seed=seed)
    return records


def _packed_parser(schema, word_starts):
    """(paths [B], serialized [B]) -> packed rows with the model's names (the format version left out); with
    `word_starts`, the rows' word starts too (all 0 in a row written without them)."""
    spec = schema.feature_spec()
    spec.pop(WORD_STARTS_FEATURE, None)
    if word_starts:
        spec[WORD_STARTS_FEATURE] = spec_lib.optional_feature(WORD_STARTS_FEATURE, schema.max_seq_length)

    @tf.autograph.experimental.do_not_convert  # TensorFlow ops only: nothing to convert
    def parse(paths, serialized):
        parsed = tf.io.parse_example(serialized, spec)
        parsed.pop(schema.record_name(FORMAT_FEATURE))
        return spec_lib.to_model_features(parsed)

    return parse


def _batch_parser(schema, max_seq_length, max_predictions_per_seq, batch_size, masker):
    """(paths [B], serialized [B]) -> the feature dict; a record of another length fails naming its file."""
    wanted = spec_lib.feature_lengths(max_seq_length, max_predictions_per_seq)
    present = [(name, dtype, kind) for name, dtype, kind in spec_lib.V1_FEATURES if name in schema.length_of]
    ragged_spec = {schema.record_name(name): tf.io.RaggedFeature(dtype) for name, dtype, _ in present}
    if _reads_word_starts(masker):  # a record without them gives an empty row, padded with 0s below
        ragged_spec[WORD_STARTS_FEATURE] = tf.io.RaggedFeature(tf.int64)

    def check_lengths(paths, name, ragged, expected, exact):
        lengths = ragged.row_lengths()
        ok = tf.reduce_all(tf.equal(lengths, expected) if exact else tf.less_equal(lengths, expected))

        def fail():
            bad = tf.argmax(tf.cast(tf.not_equal(lengths, expected) if exact else lengths > expected, tf.int32))
            message = join_message(
                "A record in ", paths[bad], " does not match the pipeline's lengths: feature ", name, " has shape [",
                lengths[bad], "], expected [", str(expected), "]", "" if exact else " at most", ". Pass the "
                "max_seq_length / max_predictions_per_seq the records were written with.")
            with tf.control_dependencies([tf.debugging.Assert(False, [message], name="check_record_length")]):
                return tf.constant(False)

        return tf.cond(ok, lambda: ok, fail)

    @tf.autograph.experimental.do_not_convert  # TensorFlow ops only: nothing to convert
    def parse(paths, serialized):
        parsed = tf.io.parse_example(serialized, ragged_spec)
        dense, checks = {}, []
        for v1_name, dtype, kind in present:
            name = schema.record_name(v1_name)
            if masker is not None and kind == "pred":
                # Static masks of a record are only undone (below): padded to their own length.
                dense[name] = parsed[name].to_tensor()
                continue
            exact = masker is None or kind != "seq"
            checks.append(check_lengths(paths, name, parsed[name], wanted[kind], exact))
            dense[name] = parsed[name].to_tensor(shape=[batch_size, wanted[kind]])
        if WORD_STARTS_FEATURE in ragged_spec:
            dense[WORD_STARTS_FEATURE] = parsed[WORD_STARTS_FEATURE].to_tensor(shape=[batch_size, max_seq_length])
        with tf.control_dependencies(checks):
            features = {k: tf.identity(v) for k, v in spec_lib.to_model_features(dense).items()}
        if masker is not None:
            features = masker.unmasked_features(features)
        return features

    return parse

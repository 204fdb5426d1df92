"""Checking pre-training records before a run trains on them: a few records of every input file against the run's
lengths and the model's vocab.

Why before: a record of another length fails only when its batch is read (a shape error deep in the step), and an
id >= vocab_size fails as a GatherV2 traceback on a CPU and is read as zeros, silently, on a GPU.
"""

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.errors import InputError
from bert_tf.records import feature_spec as spec_lib
from bert_tf.records.checked_reading import read_error_text
from bert_tf.records.compression import detect_compression
from bert_tf.records.schema import schema_of_record
from bert_tf.text.file_patterns import expand_file_patterns

# (v1 name, what bounds its values): ids index the vocab, positions the sequence, segment ids the type table.
_BOUNDED = (("input_ids", "vocab_size"), ("masked_lm_ids", "vocab_size"),
            ("masked_lm_positions", "max_seq_length"), ("segment_ids", "type_vocab_size"))


def check_record_files(input_patterns, max_seq_length, max_predictions_per_seq, vocab_size, type_vocab_size=2,
                       records_per_file=16, masks_drawn_again=False):
    """Reads the first `records_per_file` records of every file and raises an InputError naming the file, the
    feature, the value and the fix when a record is unreadable, lacks a feature, has another length than
    `max_seq_length` / `max_predictions_per_seq`, or holds an id outside [0, vocab_size) (positions outside
    [0, max_seq_length), segment ids outside [0, type_vocab_size)). Returns the files, and logs the records'
    instances per record (more than 1 in packed rows) and their share of non-padding tokens.

    masks_drawn_again: the run masks on the fly (dynamic masking): only input_ids is needed, sequences may be
    shorter than max_seq_length and the records' own masks are not checked.

    Example:
    >>> check_record_files("data/train-*.tfrecord", 128, 20, vocab_size=30522)  # doctest: +SKIP
    ['data/train-00000.tfrecord', 'data/train-00001.tfrecord']
    """
    files = expand_file_patterns(input_patterns)
    bounds = {"vocab_size": vocab_size, "max_seq_length": max_seq_length, "type_vocab_size": type_vocab_size}
    checked = instances = tokens = positions = 0
    for path in files:
        records = _first_records(path, records_per_file)
        if not records:
            continue
        schema = schema_of_record(records[0], path)
        schema.check(max_seq_length, max_predictions_per_seq, required=("input_ids",) if masks_drawn_again else None,
                     shorter_sequences=masks_drawn_again, masks=not masks_drawn_again)
        for index, serialized in enumerate(records):
            features = tf.train.Example.FromString(serialized).features.feature
            ids = features[schema.record_name("input_ids")].int64_list.value
            checked += 1
            instances += (int(np.count_nonzero(features["next_sentence_weights"].float_list.value)) if schema.packed
                          else 1)
            tokens += int(np.count_nonzero(ids))
            positions += max_seq_length
            for v1_name, bound in _BOUNDED:
                name = schema.record_name(v1_name)
                if name not in features or (masks_drawn_again and v1_name.startswith("masked_lm")):
                    continue
                values = np.asarray(features[name].int64_list.value)
                _check_length(path, index, schema, v1_name, len(values), max_seq_length, max_predictions_per_seq,
                              masks_drawn_again)
                outside = (values < 0) | (values >= bounds[bound])
                if outside.any():
                    raise InputError(
                        f"Record {index} of {path} holds {name} value {int(values[outside][0])}, outside [0, {bound}="
                        f"{bounds[bound]}): the records were made with another vocab or model; write them again "
                        f"with this model's vocab, or train a model whose {bound} covers them.")
    if checked:
        logging.info("Checked the first %d record(s) of %d file(s): %.2f instances per record, %.1f%% non-padding "
                     "tokens.", checked, len(files), instances / checked, 100 * tokens / positions)
    return files


def _first_records(path, count):
    try:
        dataset = tf.data.TFRecordDataset(path, compression_type=detect_compression(path)).take(count)
        return [record.numpy() for record in dataset]
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
        raise InputError(f"TFRecord file {path} cannot be read ({read_error_text(error)}): check that "
                         f"it is a TFRecord file written by bert-create-pretraining-data, and recreate it if it is "
                         f"corrupt.") from None


def _check_length(path, index, schema, v1_name, found, max_seq_length, max_predictions_per_seq, shorter_sequences):
    """Every record, not only the first, must have the schema's lengths."""
    kind = dict((name, kind) for name, _, kind in spec_lib.V1_FEATURES)[v1_name]
    expected = spec_lib.feature_lengths(max_seq_length, max_predictions_per_seq)[kind]
    if schema.packed and kind != "seq":  # a packed row's slots: those of the file's first row (checked there)
        expected = schema.length_of[v1_name]
    if found != expected and not (shorter_sequences and kind == "seq" and found < expected):
        flag = "max_seq_length" if kind == "seq" else "max_predictions_per_seq"
        raise InputError(f"Record {index} of {path} has {schema.record_name(v1_name)} of length {found}, expected "
                         f"[{expected}] ({flag}={expected}): pass the {flag} the records were written with, or write "
                         f"them again.")

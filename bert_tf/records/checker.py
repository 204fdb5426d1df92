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
from bert_tf.records.word_starts import WORD_STARTS_FEATURE
from bert_tf.text.file_patterns import expand_file_patterns

# Records read from the start of each file: enough to catch a file of another format or vocab, few enough that a
# run of thousands of files starts at once.
RECORDS_CHECKED_PER_FILE = 16
# (v1 name, what bounds its values): ids index the vocab, positions the sequence, segment ids the type table.
_BOUNDED = (("input_ids", "vocab_size"), ("masked_lm_ids", "vocab_size"),
            ("masked_lm_positions", "max_seq_length"), ("segment_ids", "type_vocab_size"),
            (WORD_STARTS_FEATURE, "word_start_flags"))  # optional: 0 or 1 (records/word_starts.py)


def check_record_files(input_patterns, max_seq_length, max_predictions_per_seq, vocab_size, type_vocab_size=2,
                       masks_drawn_again=False, vocab=None, stats=None):
    """Reads the first `RECORDS_CHECKED_PER_FILE` records of every file and raises an InputError naming the file, the
    feature, the value and the fix when a record is unreadable, lacks a feature, has another length than
    `max_seq_length` / `max_predictions_per_seq`, or holds an id outside [0, vocab_size) (positions outside
    [0, max_seq_length), segment ids outside [0, type_vocab_size)). Returns the files, and logs the records'
    instances per record (more than 1 in packed rows) and their share of non-padding tokens.

    masks_drawn_again: the run masks on the fly (dynamic masking): only input_ids is needed, sequences may be
    shorter than max_seq_length and the records' own masks are not checked.
    vocab: the run's `Vocabulary`: the records must put its [CLS] where each instance starts, its [SEP] at the
        last token and, at their masked positions, mostly its [MASK] (see `check_special_tokens`).
    stats: a dict to fill with what was read: `records` (the files' records, counted or estimated from the file
        sizes; None when a compressed file makes it unknown), `estimated` (whether any file was estimated).

    Example:
    >>> check_record_files("data/train-*.tfrecord", 128, 20, vocab_size=30522)  # doctest: +SKIP
    ['data/train-00000.tfrecord', 'data/train-00001.tfrecord']
    """
    files = expand_file_patterns(input_patterns)
    bounds = {"vocab_size": vocab_size, "max_seq_length": max_seq_length, "type_vocab_size": type_vocab_size,
              "word_start_flags": 2}
    checked = instances = tokens = positions = 0
    total, estimated = 0, False
    for path in files:
        records = _first_records(path, RECORDS_CHECKED_PER_FILE)
        count, guessed = _record_count(path, records, RECORDS_CHECKED_PER_FILE)
        total = None if total is None or count is None else total + count
        estimated = estimated or guessed
        if not records:
            continue
        schema = schema_of_record(records[0], path)
        schema.check(max_seq_length, max_predictions_per_seq, required=("input_ids",) if masks_drawn_again else None,
                     shorter_sequences=masks_drawn_again, masks=not masks_drawn_again)
        special = _SpecialTokenSample()
        for index, serialized in enumerate(records):
            features = tf.train.Example.FromString(serialized).features.feature
            ids = features[schema.record_name("input_ids")].int64_list.value
            special.add(index, schema, features, ids, with_masks=not masks_drawn_again)
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
                if outside.any() and bound == "word_start_flags":
                    raise InputError(f"Record {index} of {path} holds {name} value {int(values[outside][0])}: word "
                                     f"starts are 0 or 1 (docs/record_format.md); write the records again with "
                                     f"bert-create-pretraining-data.")
                if outside.any():
                    raise InputError(
                        f"Record {index} of {path} holds {name} value {int(values[outside][0])}, outside [0, {bound}="
                        f"{bounds[bound]}): the records were made with another vocab or model; write them again "
                        f"with this model's vocab, or train a model whose {bound} covers them.")
        if vocab is not None:
            check_special_tokens(path, special, vocab)
    if checked == 0:
        raise InputError(f"{input_patterns} hold(s) no record (the files are empty): write the records again, or "
                         f"leave these files out.")
    if stats is not None:
        stats.update(records=total, estimated=estimated)
    if checked:
        logging.info("Checked the first %d record(s) of %d file(s): %.2f instances per record, %.1f%% non-padding "
                     "tokens.", checked, len(files), instances / checked, 100 * tokens / positions)
    return files


class _SpecialTokenSample:
    """What the first records of a file put where the special tokens go: the first token of each instance (its
    [CLS]), the last non-padding token (the last [SEP]) and the input ids at the masked positions."""

    def __init__(self):
        self.starts, self.ends, self.masked = [], [], []

    def add(self, index, schema, features, ids, with_masks):
        ids = np.asarray(ids)
        if schema.packed:
            weights = np.asarray(features["next_sentence_weights"].float_list.value)
            starts = np.asarray(features["next_sentence_positions"].int64_list.value)[weights > 0]
        else:
            starts = np.zeros(1, np.int64)
        self.starts += [(index, int(p), int(ids[p])) for p in starts if 0 <= p < len(ids)]
        real = np.flatnonzero(ids)
        if len(real):
            self.ends.append((index, int(real[-1]), int(ids[real[-1]])))
        positions_name = schema.record_name("masked_lm_positions")
        if with_masks and positions_name in features:
            positions = np.asarray(features[positions_name].int64_list.value)
            weights = np.asarray(features[schema.record_name("masked_lm_weights")].float_list.value)
            positions = positions[(weights > 0) & (positions >= 0) & (positions < len(ids))]
            self.masked += ids[positions].tolist()


# Fewer masked positions than this say too little about which id is [MASK] (80% of them hold it, 20% do not).
_MIN_MASKED_SAMPLE = 10


def check_special_tokens(path, sample, vocab):
    """Raises `InputError` when the first records of `path` (a `_SpecialTokenSample`) put other ids than `vocab`'s
    where [CLS], [SEP] and [MASK] go: the records were made with another vocab (a model trained on them would learn
    the wrong tokens, and the vocab it keeps would not read its own input).

    [CLS] and [SEP] are exact (each instance starts with [CLS] and the last token is [SEP]); [MASK] is judged by the
    80/10/10 rule: of the masked positions (at least 10 of them), the vocab's [MASK] must be the most frequent input
    id and hold at least 40% of them (the rule puts it at 80%)."""
    fix = ("the records were made with another vocab: pass the vocab they were made with as --vocab_file, or "
           "write them again with this one")
    for token, expected, found in (("[CLS]", vocab.cls_id, sample.starts), ("[SEP]", vocab.sep_id, sample.ends)):
        if expected is None:
            raise InputError(f"{vocab.source} has no {token}, which the records of {path} hold: pass the vocab they "
                             f"were made with as --vocab_file.")
        wrong = [(index, position, value) for index, position, value in found if value != expected]
        if wrong:
            index, position, value = wrong[0]
            raise InputError(f"Record {index} of {path} has id {value} ({_token_name(vocab, value)} in this vocab) at "
                             f"position {position}, where {token} goes, but {vocab.source} has {token} at id "
                             f"{expected}: {fix}.")
    if len(sample.masked) >= _MIN_MASKED_SAMPLE and vocab.mask_id is not None:
        values, counts = np.unique(sample.masked, return_counts=True)
        share = float(np.mean(np.asarray(sample.masked) == vocab.mask_id))
        top = int(values[np.argmax(counts)])
        if top != vocab.mask_id and share < 0.4:
            raise InputError(f"The masked positions of the first records of {path} hold id {top} most often "
                             f"({_token_name(vocab, top)} in this vocab, {np.max(counts)} of {len(sample.masked)}), "
                             f"but {vocab.source} has [MASK] at id {vocab.mask_id} ({100 * share:.0f}% of them): "
                             f"{fix}.")


def _token_name(vocab, token_id):
    return repr(vocab.tokens[token_id]) if 0 <= token_id < vocab.size else "beyond its end"


def _record_count(path, first_records, read):
    """(records in `path`, whether estimated): counted when the file holds no more than the records already read,
    else estimated from its size and their mean framed size; (None, False) for a compressed file."""
    if len(first_records) < read:
        return len(first_records), False
    if detect_compression(path):
        return None, False
    # A TFRecord frames each record with a length (8 bytes) and two CRCs (4 bytes each).
    mean_size = float(np.mean([len(r) for r in first_records])) + 16
    return max(len(first_records), int(round(tf.io.gfile.stat(path).length / mean_size))), True


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
    kind = dict((name, kind) for name, _, kind in spec_lib.V1_FEATURES + spec_lib.OPTIONAL_FEATURES)[v1_name]
    expected = spec_lib.feature_lengths(max_seq_length, max_predictions_per_seq)[kind]
    if schema.packed and kind != "seq":  # a packed row's slots: those of the file's first row (checked there)
        expected = schema.length_of[v1_name]
    if found != expected and not (shorter_sequences and kind == "seq" and found < expected):
        flag = "max_seq_length" if kind == "seq" else "max_predictions_per_seq"
        raise InputError(f"Record {index} of {path} has {schema.record_name(v1_name)} of length {found}, expected "
                         f"[{expected}] ({flag}={expected}): pass the {flag} the records were written with, or write "
                         f"them again.")

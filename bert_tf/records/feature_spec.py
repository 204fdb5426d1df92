"""The original pre-training TFRecord format: feature names, dtypes and shapes (docs/record_format.md).

`create_pretraining_data.py` wrote `input_ids`/`segment_ids` ("v1"); Model Garden reads the same records under
`input_word_ids`/`input_type_ids` ("v2"). Models in this package take the encoder's names (`input_word_ids`,
`input_mask`, `input_type_ids`), so readers rename v1 features on the way in.
"""

import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.records.word_starts import WORD_STARTS_FEATURE

V1_TO_MODEL_NAMES = {"input_ids": "input_word_ids", "segment_ids": "input_type_ids",
                     # packed rows (records/packed_rows.py)
                     "position_ids": "input_position_ids", "instance_ids": "input_instance_ids"}

# (record name in v1, dtype, length kind): "seq" features have max_seq_length values, "pred" features
# max_predictions_per_seq values, "one" a single value.
V1_FEATURES = (
    ("input_ids", tf.int64, "seq"),
    ("input_mask", tf.int64, "seq"),
    ("segment_ids", tf.int64, "seq"),
    ("masked_lm_positions", tf.int64, "pred"),
    ("masked_lm_ids", tf.int64, "pred"),
    ("masked_lm_weights", tf.float32, "pred"),
    ("next_sentence_labels", tf.int64, "one"),
)

# Features written only when asked for (a word segmenter's masking groups: records/word_starts.py), in unpacked
# records and packed rows alike; readers take them when present.
OPTIONAL_FEATURES = (
    (WORD_STARTS_FEATURE, tf.int64, "seq"),
)

NAME_VERSIONS = ("v1", "v2")


def record_name(v1_name, names="v1"):
    """The name a feature has in records of the given naming version."""
    if names not in NAME_VERSIONS:
        raise InputError(f"names={names!r} is unknown: use one of {NAME_VERSIONS}.")
    return V1_TO_MODEL_NAMES.get(v1_name, v1_name) if names == "v2" else v1_name


def feature_lengths(max_seq_length, max_predictions_per_seq):
    return {"seq": max_seq_length, "pred": max_predictions_per_seq, "one": 1}


def feature_spec(max_seq_length, max_predictions_per_seq, names="v1", optional=()):
    """The `tf.io.FixedLenFeature` dict that parses records of this format, keyed by record name; `optional`
    names the `OPTIONAL_FEATURES` the records hold.

    Example:
    >>> spec = feature_spec(128, 20)
    >>> spec["input_ids"].shape, spec["masked_lm_weights"].dtype
    ([128], tf.float32)
    """
    lengths = feature_lengths(max_seq_length, max_predictions_per_seq)
    spec = {record_name(name, names): tf.io.FixedLenFeature([lengths[kind]], dtype)
            for name, dtype, kind in V1_FEATURES}
    spec.update({name: optional_feature(name, lengths[kind])
                 for name, _, kind in OPTIONAL_FEATURES if name in optional})
    return spec


def optional_feature(name, length):
    """The `tf.io.FixedLenFeature` of an `OPTIONAL_FEATURES` entry (the same name in v1 and v2): all 0 in a record
    without it, so files with and without it read alike (0 word starts: group by "##" pieces).

    Example:
    >>> optional_feature("word_starts", 4).default_value
    [0, 0, 0, 0]
    """
    dtype = dict((n, d) for n, d, _ in OPTIONAL_FEATURES)[name]
    return tf.io.FixedLenFeature([length], dtype, default_value=[0] * length)


def to_model_features(parsed):
    """Record features (v1 or v2 names) -> the model's names, int64 cast to int32 as the original readers do."""
    features = {}
    for name, value in parsed.items():
        name = V1_TO_MODEL_NAMES.get(name, name)
        features[name] = tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
    return features

"""Reading records of the original format back as numpy arrays (for bert-inspect-data and tests).

Parsing goes through `tf.io.parse_example` with exactly the spec of `feature_spec.py`, so a record that reads here
reads in training too. The layout (feature names v1/v2, max_seq_length, max_predictions_per_seq) can be taken from
the first record.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from bert_tf.records import feature_spec as spec_lib

_GZIP_MAGIC = b"\x1f\x8b"


@dataclasses.dataclass(frozen=True)
class RecordLayout:
    """Feature naming and lengths of a record file.

    Example:
    >>> infer_layout("train.tfrecord")
    RecordLayout(names='v1', max_seq_length=128, max_predictions_per_seq=20)
    """

    names: str                    # "v1" (input_ids, segment_ids) or "v2" (input_word_ids, input_type_ids)
    max_seq_length: int
    max_predictions_per_seq: int


def compression_of(path):
    """"GZIP" for a gzip file, else "" (the writers here write nothing else)."""
    with tf.io.gfile.GFile(path, "rb") as f:
        return "GZIP" if f.read(2) == _GZIP_MAGIC else ""


def infer_layout(path):
    """The naming and lengths of the records in a file, from its first record."""
    dataset = tf.data.TFRecordDataset(path, compression_type=compression_of(path))
    for serialized in dataset.take(1):
        features = tf.train.Example.FromString(serialized.numpy()).features.feature
        names = "v2" if "input_word_ids" in features else "v1"
        seq = features[spec_lib.record_name("input_ids", names)].int64_list.value
        pred = features["masked_lm_positions"].int64_list.value
        return RecordLayout(names, len(seq), len(pred))
    raise ValueError(f"{path} holds no record: pass a file written by bert-create-pretraining-data.")


def read_records(paths, layout=None, batch_size=1024, max_records=None):
    """Batches of parsed records from files (in file order): dicts of numpy arrays keyed by v1 names.

    Example:
    >>> for batch in read_records(["train.tfrecord"], max_records=10):
    ...     batch["input_ids"].shape
    (10, 128)
    """
    paths = list(paths)
    layout = layout or infer_layout(paths[0])
    spec = spec_lib.feature_spec(layout.max_seq_length, layout.max_predictions_per_seq, layout.names)
    to_v1 = {spec_lib.record_name(name, layout.names): name for name, _, _ in spec_lib.V1_FEATURES}
    seen = 0
    for path in paths:
        dataset = tf.data.TFRecordDataset(path, compression_type=compression_of(path)).batch(batch_size)
        for serialized in dataset:
            if max_records is not None:
                serialized = serialized[:max_records - seen]
            parsed = tf.io.parse_example(serialized, spec)
            batch = {to_v1[name]: value.numpy() for name, value in parsed.items()}
            seen += len(batch["input_ids"])
            yield batch
            if max_records is not None and seen >= max_records:
                return


def parse_record(serialized, layout):
    """One serialized record -> dict of numpy arrays keyed by v1 names (tf.io.parse_single_example)."""
    spec = spec_lib.feature_spec(layout.max_seq_length, layout.max_predictions_per_seq, layout.names)
    parsed = tf.io.parse_single_example(serialized, spec)
    return {name: parsed[spec_lib.record_name(name, layout.names)].numpy() for name, _, _ in spec_lib.V1_FEATURES}


def concatenate(batches):
    """One dict of arrays from batches of `read_records`."""
    batches = list(batches)
    if not batches:
        return {}
    return {name: np.concatenate([b[name] for b in batches]) for name in batches[0]}

"""Reading records of the original format back as numpy arrays (for bert-inspect-data, evaluation and tests).

Parsing goes through `tf.io.parse_example` with exactly the spec of `feature_spec.py`, so a record that reads here
reads in training too. The schema (feature names v1/v2, max_seq_length, max_predictions_per_seq) is taken from
the first record unless given.
"""

import numpy as np
import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.records.checked_reading import read_error_text
from bert_tf.records.compression import detect_compression
from bert_tf.records.schema import read_schema


def read_records(paths, schema=None, batch_size=1024, max_records=None):
    """Batches of parsed records from files (in file order): dicts of numpy arrays keyed by v1 names (packed
    rows with their own features, records/packed_rows.py).

    A corrupt record raises a ValueError naming its file.

    Example:
    >>> for batch in read_records(["train.tfrecord"], max_records=10):  # doctest: +SKIP
    ...     batch["input_ids"].shape
    (10, 128)
    """
    paths = [paths] if isinstance(paths, str) else list(paths)
    schema = schema or read_schema(paths)
    spec = schema.feature_spec()
    to_v1 = {schema.record_name(name): name for name in schema.length_of}
    seen = 0
    for path in paths:
        compression = detect_compression(path)
        dataset = tf.data.TFRecordDataset(path, compression_type=compression).batch(batch_size)
        try:
            for serialized in dataset:
                if max_records is not None:
                    serialized = serialized[:max_records - seen]
                parsed = tf.io.parse_example(serialized, spec)
                batch = {to_v1[name]: value.numpy() for name, value in parsed.items()}
                seen += len(batch["input_ids"])
                yield batch
                if max_records is not None and seen >= max_records:
                    return
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
            raise InputError(f"TFRecord file {path} holds a corrupt or foreign record "
                             f"({read_error_text(error)}): recreate it or leave it out of the "
                             f"input files.") from None


def concatenate(batches):
    """One dict of arrays from batches of `read_records`."""
    batches = list(batches)
    if not batches:
        return {}
    return {name: np.concatenate([b[name] for b in batches]) for name in batches[0]}

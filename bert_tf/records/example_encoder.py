"""tf.train.Example bytes for many records at once, with numpy only (no TensorFlow import).

Why not `tf.train.Example(...).SerializeToString()`: building a protobuf object per record costs more than making
the instance itself, and this runs in worker processes that stay free of TensorFlow (its import alone takes
~600 MB). The wire format is small and fixed (tensorflow/core/example/{example,feature}.proto):

    Example  { Features features = 1; }            Features { map<string, Feature> feature = 1; }
    Feature  { FloatList float_list = 2; Int64List int64_list = 3; }
    Int64List { repeated int64 value = 1 [packed]; }   FloatList { repeated float value = 1 [packed]; }

A map entry is a message { string key = 1; Feature value = 2; }. Packed int64 values are varints, packed floats
little-endian float32. The bytes parse to the same Example that protobuf builds (tests check it).
"""

import functools

import numpy as np

_LEN = 2  # wire type of length-delimited fields
_EXAMPLE_FEATURES = bytes([1 << 3 | _LEN])  # Example.features, Features.feature, entry.key, *List.value
_ENTRY_VALUE = bytes([2 << 3 | _LEN])
_FLOAT_LIST = bytes([2 << 3 | _LEN])
_INT64_LIST = bytes([3 << 3 | _LEN])


def varint(n):
    """The protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _varint_rows(values):
    """Packed varints of each row of a non-negative int array [N, L]: (one bytes blob, row end offsets [N])."""
    values = np.asarray(values)
    if values.size and values.min() < 0:
        raise ValueError("Int64 features must be non-negative here (ids, positions, labels).")
    num_rows, length = values.shape
    largest = int(values.max()) if values.size else 0
    if largest < 0x80:  # one byte a value: the common case of masks, segment ids and labels
        return values.astype(np.uint8).tobytes(), np.arange(1, num_rows + 1) * length
    if largest < _TABLE_LIMIT:  # ids and positions: look their bytes up
        table, table_lengths = _varint_table(1 << max(largest.bit_length(), 8))
        num_bytes = table_lengths[values]
        encoded = table[values]                                            # [N, L, 3]
        blob = encoded[np.arange(3) < num_bytes[..., None]].tobytes()      # row-major: rows one after the other
        return blob, np.cumsum(num_bytes.sum(axis=1, dtype=np.int64))
    rows = [b"".join(varint(int(v)) for v in row) for row in values]
    return b"".join(rows), np.cumsum([len(r) for r in rows])


_TABLE_LIMIT = 1 << 21  # values below this take at most 3 varint bytes


@functools.lru_cache(maxsize=None)
def _varint_table(size):
    """The varint bytes (zero-padded to 3) and byte counts of 0 .. size - 1."""
    values = np.arange(size, dtype=np.uint32)
    lengths = (1 + (values >= 1 << 7) + (values >= 1 << 14)).astype(np.uint8)
    table = np.stack([values & 0x7F, (values >> 7) & 0x7F, (values >> 14) & 0x7F], axis=1)
    table |= (np.arange(3)[None, :] < lengths[:, None] - 1).astype(np.uint32) << 7
    return table.astype(np.uint8), lengths


def _float_rows(values):
    values = np.ascontiguousarray(values, dtype="<f4")
    return values.tobytes(), np.arange(1, len(values) + 1) * values.shape[1] * 4


class _FeatureHeader:
    """The bytes before a feature's packed values; they depend only on the payload length (cached)."""

    def __init__(self, name, is_float):
        self.key = name.encode("utf-8")
        self.list_tag = _FLOAT_LIST if is_float else _INT64_LIST
        self.cache = {}

    def __call__(self, payload_length):
        header = self.cache.get(payload_length)
        if header is None:
            value_list_len = 1 + len(varint(payload_length)) + payload_length
            feature_len = 1 + len(varint(value_list_len)) + value_list_len
            entry_len = 1 + len(varint(len(self.key))) + len(self.key) + 1 + len(varint(feature_len)) + feature_len
            header = b"".join([_EXAMPLE_FEATURES, varint(entry_len),
                               _EXAMPLE_FEATURES, varint(len(self.key)), self.key,
                               _ENTRY_VALUE, varint(feature_len),
                               self.list_tag, varint(value_list_len),
                               _EXAMPLE_FEATURES, varint(payload_length)])
            self.cache[payload_length] = header
        return header


class ExampleEncoder:
    """Serializes rows of fixed-length features into tf.train.Example bytes.

    Features whose encoded size is the same in every row (masks, segment ids, floats, small positions) are laid
    out for all rows at once with numpy and written first; the others follow with a header per row. The order of
    map entries carries no meaning in protobuf, and a given input always gives the same bytes.

    Args:
        feature_kinds: (name, is_float) pairs.

    Example:
    >>> import tensorflow as tf
    >>> encoder = ExampleEncoder([("input_ids", False), ("masked_lm_weights", True)])
    >>> records = encoder.encode({"input_ids": np.array([[101, 7592, 102]]),
    ...                           "masked_lm_weights": np.array([[1.0, 0.0]])})
    >>> tf.train.Example.FromString(records[0]).features.feature["input_ids"].int64_list.value
    [101, 7592, 102]
    """

    def __init__(self, feature_kinds):
        self.features = [(name, _FeatureHeader(name, is_float), is_float) for name, is_float in feature_kinds]
        self._outer = {}

    def encode(self, arrays):
        """arrays: name -> [N, L] array (every feature, N rows each) -> list of N serialized Examples."""
        num_rows = None
        fixed, variable = [], []
        for name, header, is_float in self.features:
            values = np.asarray(arrays[name])
            if values.ndim != 2:
                raise ValueError(f"Feature {name} has shape {values.shape}: pass a [num_records, length] array.")
            if num_rows is None:
                num_rows = len(values)
            elif len(values) != num_rows:
                raise ValueError(f"Feature {name} has {len(values)} rows, the others {num_rows}.")
            blob, ends = _float_rows(values) if is_float else _varint_rows(values)
            width = int(ends[0]) if num_rows else 0
            if num_rows and np.all(np.diff(ends) == width):
                head = np.frombuffer(header(width), np.uint8)
                payload = np.frombuffer(blob, np.uint8).reshape(num_rows, width)
                fixed.append(np.concatenate([np.broadcast_to(head, (num_rows, len(head))), payload], axis=1))
            else:
                variable.append((header, blob, [0] + ends.tolist()))
        if not num_rows:
            return []
        block = np.concatenate(fixed, axis=1) if fixed else np.zeros((num_rows, 0), np.uint8)
        width = block.shape[1]
        block = block.tobytes()
        records = []
        outer = self._outer
        for row in range(num_rows):
            parts = [block[row * width:(row + 1) * width]]
            for header, blob, ends in variable:
                start, end = ends[row], ends[row + 1]
                parts.append(header(end - start))
                parts.append(blob[start:end])
            body = b"".join(parts)
            prefix = outer.get(len(body))
            if prefix is None:
                prefix = outer[len(body)] = _EXAMPLE_FEATURES + varint(len(body))
            records.append(prefix + body)
        return records

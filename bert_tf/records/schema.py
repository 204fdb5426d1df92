"""`RecordSchema`: which feature names (v1/v2) and lengths the records of a set of files have, read from the first
record, and checked against the lengths a run asks for."""

import dataclasses

import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.records import feature_spec as spec_lib
from bert_tf.records.checked_reading import first_record
from bert_tf.records.compression import detect_compression
from bert_tf.records.packed_rows import FORMAT_FEATURE, PACKED_FEATURES, RowLayout

NAMES = ("auto",) + spec_lib.NAME_VERSIONS
_FLAG_OF_KIND = {"seq": "max_seq_length", "pred": "max_predictions_per_seq", "one": "the label length"}


@dataclasses.dataclass(frozen=True)
class RecordSchema:
    """The feature naming of records and the length of each feature they hold (keyed by v1 name).

    Example:
    >>> schema = RecordSchema.standard("v1", 128, 20)
    >>> schema.max_seq_length, schema.max_predictions_per_seq, schema.record_name("input_ids")
    (128, 20, 'input_ids')
    >>> schema.check(128, 20)
    >>> schema.check(512, 20)
    Traceback (most recent call last):
    bert_tf.errors.InputError: Records in the records do not match max_seq_length=512: feature input_ids has shape
    [128], expected [512]. Pass the max_seq_length the records were written with (128) or write them again.
    """

    names: str        # "v1" (input_ids, segment_ids) or "v2" (input_word_ids, input_type_ids)
    lengths: tuple    # (v1 name, length) of each feature the records hold
    path: str = "the records"  # the file the schema was read from, for messages

    @classmethod
    def standard(cls, names, max_seq_length, max_predictions_per_seq, path="the records"):
        """The schema of complete records written by create_pretraining_data."""
        wanted = spec_lib.feature_lengths(max_seq_length, max_predictions_per_seq)
        return cls(names, tuple((name, wanted[kind]) for name, _, kind in spec_lib.V1_FEATURES), path)

    @property
    def length_of(self):
        return dict(self.lengths)

    @property
    def max_seq_length(self):
        return self.length_of.get("input_ids")

    @property
    def max_predictions_per_seq(self):
        """Prediction slots per record (in packed rows, shared by the row's instances)."""
        return self.length_of.get("masked_lm_positions")

    @property
    def packed(self):
        """Whether the records are packed rows (several instances each, records/packed_rows.py)."""
        return FORMAT_FEATURE in self.length_of

    @property
    def row_layout(self):
        """The `RowLayout` of packed records (None for records of one instance)."""
        if not self.packed:
            return None
        return RowLayout(self.max_seq_length, self.length_of["next_sentence_labels"], self.max_predictions_per_seq)

    def record_name(self, v1_name):
        return spec_lib.record_name(v1_name, self.names)

    @property
    def optional_features(self):
        """The v1 names of the `OPTIONAL_FEATURES` these records hold (e.g. word_starts)."""
        return tuple(name for name, _, _ in spec_lib.OPTIONAL_FEATURES if name in self.length_of)

    def feature_spec(self):
        """The `tf.io.FixedLenFeature` dict that parses these records (complete records only)."""
        if not self.packed:
            return spec_lib.feature_spec(self.max_seq_length, self.max_predictions_per_seq, self.names,
                                         self.optional_features)
        spec = {self.record_name(name): tf.io.FixedLenFeature([length], tf.float32 if is_float else tf.int64)
                for (name, is_float, _), length in zip(PACKED_FEATURES, self.row_layout.lengths().values())}
        for name in self.optional_features:
            spec[self.record_name(name)] = spec_lib.optional_feature(name, self.max_seq_length)
        return spec

    def check_packed(self, max_seq_length, layout=None):
        """For packed records: raises an InputError unless their rows have max_seq_length tokens (and, when a
        `RowLayout` is asked for, its instances and prediction slots per row)."""
        found = self.row_layout
        if found.max_seq_length != max_seq_length:
            raise InputError(f"Packed rows in {self.path} have {found.max_seq_length} tokens, not max_seq_length="
                             f"{max_seq_length}: pass the max_seq_length the rows were written with or write them "
                             f"again.")
        if layout is not None and layout != found:
            raise InputError(f"Packed rows in {self.path} hold {found.max_instances_per_row} instances and "
                             f"{found.max_predictions_per_row} prediction slots per row, the run asks for "
                             f"{layout.max_instances_per_row} and {layout.max_predictions_per_row}: pass the row "
                             f"packing settings the records were written with, or write them again.")

    def check(self, max_seq_length, max_predictions_per_seq, required=None, shorter_sequences=False,
              masks=True):
        """Raises a ValueError naming the feature, its length and the flag to fix when the records do not have
        the features `required` (v1 names; default all) with the lengths asked for.

        shorter_sequences: sequences up to max_seq_length are fine (they are padded, e.g. for dynamic masking).
        masks: whether the masked-LM features' lengths matter (not when masks are drawn again).
        """
        held = self.length_of
        required = tuple(name for name, _, _ in spec_lib.V1_FEATURES) if required is None else required
        missing = [self.record_name(n) for n in required if n not in held]
        if missing:
            raise InputError(f"The records of {self.path} lack {missing} (they hold "
                             f"{sorted(self.record_name(n) for n in held)}): write them with "
                             f"bert-create-pretraining-data, or mask unmasked records on the fly (dynamic masking).")
        if self.packed:
            self.check_packed(max_seq_length)
            return
        wanted = spec_lib.feature_lengths(max_seq_length, max_predictions_per_seq)
        for v1_name, _, kind in spec_lib.V1_FEATURES + spec_lib.OPTIONAL_FEATURES:
            if v1_name not in held or (kind == "pred" and not masks):
                continue
            found, expected = held[v1_name], wanted[kind]
            if found != expected and not (shorter_sequences and kind == "seq" and found < expected):
                flag = _FLAG_OF_KIND[kind]
                raise InputError(f"Records in {self.path} do not match {flag}={expected}: feature "
                                 f"{self.record_name(v1_name)} has shape [{found}], expected [{expected}]. Pass the "
                                 f"{flag} the records were written with ({found}) or write them again.")


def schema_of_record(serialized, path="the records", names="auto"):
    """The schema of one serialized record."""
    if names not in NAMES:
        raise InputError(f"names={names!r} is unknown: use 'auto', 'v1' (input_ids, segment_ids) or 'v2' "
                         f"(input_word_ids, input_type_ids).")
    feature_map = tf.train.Example.FromString(serialized).features.feature
    found = "v1" if "input_ids" in feature_map else "v2" if "input_word_ids" in feature_map else None
    if found is None:
        raise InputError(f"The first record of {path} has neither input_ids (v1) nor input_word_ids (v2), only "
                         f"{sorted(feature_map)}: these are not BERT pre-training records.")
    if names != "auto" and names != found:
        raise InputError(f"names={names!r} was asked but the records of {path} use the {found} names: pass "
                         f"names='auto' or names={found!r}.")
    lengths = []
    packed = FORMAT_FEATURE in feature_map
    for v1_name in [name for name, _, _ in (PACKED_FEATURES if packed else spec_lib.V1_FEATURES) +
                    spec_lib.OPTIONAL_FEATURES]:
        name = spec_lib.record_name(v1_name, found)
        if name in feature_map:
            feature = feature_map[name]
            lengths.append((v1_name, len(getattr(feature, feature.WhichOneof("kind")).value)))
    return RecordSchema(found, tuple(lengths), path)


def read_schema(files, compressions=None, names="auto"):
    """The schema of the first record of the first file that holds one.

    Example:
    >>> read_schema(["train.tfrecord"])  # doctest: +SKIP
    RecordSchema(names='v1', lengths=(('input_ids', 128), ...), path='train.tfrecord')
    """
    files = [files] if isinstance(files, str) else list(files)
    for i, path in enumerate(files):
        raw = first_record(path, compressions[i] if compressions else detect_compression(path))
        if raw is not None:
            return schema_of_record(raw, path, names)
    raise InputError(f"The input files hold no record ({len(files)} file(s), first {files[0]}): check that "
                     f"bert-create-pretraining-data wrote them completely.")

"""Labelled text for classification: TSV/CSV files with a header row, or a TFDS dataset prepared in a local
data_dir. Both give `LabelledTexts`."""

import csv
import dataclasses
import os

from bert_tf.errors import InputError, InputFileNotFoundError


@dataclasses.dataclass
class LabelledTexts:
    """Texts (and optional second segments) with their label names.

    Example:
    >>> data = LabelledTexts(["It rained.", "Sunny!"], None, ["bad", "good"])
    >>> len(data)
    2
    """

    texts_a: list
    texts_b: list  # None for single-sentence tasks
    labels: list

    def __len__(self):
        return len(self.labels)


def read_table(path, text_column, label_column, text_b_column=None):
    """A TSV (`.tsv`, `.txt`) or CSV file with a header row -> `LabelledTexts`.

    TSV is read as the original run_classifier read it (tab-separated, no quoting); CSV with standard quoting.

    Example:
    >>> data = read_table("train.tsv", text_column="sentence", label_column="label")  # doctest: +SKIP
    >>> len(data), data.texts_a[0], data.labels[0]  # doctest: +SKIP
    (67349, 'hide new secretions from the parental units ', '0')
    """
    if not os.path.exists(path):
        raise InputFileNotFoundError(f"Data file {path} does not exist.")
    try:
        return _read_table(path, text_column, label_column, text_b_column)
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not UTF-8 text ({e.reason}): save it as UTF-8.") from None


def _read_table(path, text_column, label_column, text_b_column):
    is_csv = path.lower().endswith(".csv")
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f) if is_csv else csv.reader(f, delimiter="\t", quotechar=None)
        header = next(rows, None)
        if header is None:
            raise InputError(f"{path} is empty: expected a header row naming the columns, then one example a row.")
        wanted = [c for c in (text_column, text_b_column, label_column) if c]
        missing = [c for c in wanted if c not in header]
        if missing:
            raise InputError(_missing_columns_text(path, header, missing, "," if is_csv else "\\t"))
        index = {c: header.index(c) for c in wanted}
        texts_a, texts_b, labels = [], [], []
        for line, row in enumerate(rows, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise InputError(f"{path} line {line} has {len(row)} fields, the header {len(header)}: "
                                 f"{'quote fields holding commas' if is_csv else 'remove tabs inside fields'}.")
            texts_a.append(row[index[text_column]])
            if text_b_column:
                texts_b.append(row[index[text_b_column]])
            labels.append(row[index[label_column]])
    if not labels:
        raise InputError(f"{path} holds a header but no examples.")
    return LabelledTexts(texts_a, texts_b if text_b_column else None, labels)


# A header cell longer than this, or with this many words, is read as a value: the file has no header row.
_HEADER_CELL_CHARS, _HEADER_CELL_WORDS = 40, 6


def _missing_columns_text(path, header, missing, separator):
    """The one-line error for columns the header lacks: a first row of values gets the missing header row suggested
    (its cells cut to 30 characters, so a long text does not fill the screen)."""
    shown = [cell if len(cell) <= 30 else cell[:29] + "\u2026" for cell in header]
    if any(len(cell) > _HEADER_CELL_CHARS or len(cell.split()) >= _HEADER_CELL_WORDS for cell in header):
        return (f"{path} has no column(s) {missing}: its first row {shown} looks like an example, not a header row "
                f"naming the columns; add one as its first line (e.g. {separator.join(missing)}) or pass "
                f"--text_column and --label_column with names from it.")
    return (f"{path} has no column(s) {missing}: its header is {shown}; pass --text_column, --text_b_column and "
            f"--label_column with names from it.")


def read_tfds(name, data_dir, split, text_column, label_column, text_b_column=None):
    """A split of a TFDS dataset already prepared in `data_dir` (nothing downloads) -> `LabelledTexts`.

    A `ClassLabel` label feature gives its names; other labels are turned into strings.

    Example:
    >>> data = read_tfds("glue/sst2", "/data/tfds", "validation", text_column="sentence",
    ...                  label_column="label")  # doctest: +SKIP
    """
    import tensorflow_datasets as tfds

    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except tfds.core.registered.DatasetNotFoundError:
        raise InputFileNotFoundError(f"TFDS dataset {name!r} is not prepared in data_dir={data_dir!r} (nothing "
                                     f"downloads here): prepare it there first.") from None
    if not builder.is_prepared():
        raise InputFileNotFoundError(f"TFDS dataset {name!r} is not prepared in data_dir={data_dir!r}.")
    features = builder.info.features
    missing = [c for c in (text_column, text_b_column, label_column) if c and c not in features]
    if missing:
        raise InputError(f"TFDS dataset {name!r} has no feature(s) {missing}: its features are {sorted(features)}.")
    if split not in builder.info.splits:
        raise InputError(f"TFDS dataset {name!r} has no split {split!r}: it has {sorted(builder.info.splits)}.")
    label_feature = features[label_column]
    names = getattr(label_feature, "names", None)
    texts_a, texts_b, labels = [], [], []
    for example in tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)):
        texts_a.append(example[text_column].decode("utf-8"))
        if text_b_column:
            texts_b.append(example[text_b_column].decode("utf-8"))
        label = example[label_column]
        labels.append(names[int(label)] if names else (label.decode("utf-8") if isinstance(label, bytes)
                                                        else str(label)))
    return LabelledTexts(texts_a, texts_b if text_b_column else None, labels)

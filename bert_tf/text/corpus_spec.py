"""Which corpus a command reads, as a configuration section: `bert-vocab`, `bert-create-pretraining-data` and its
Beam pipeline take one (`--input_file`, `--input_format` and, where TFDS is read, `--tfds_*`), each with the formats
it can read.
"""

import dataclasses
from typing import Optional

from bert_tf.config_schema import Section, field_option
from bert_tf.errors import InputError
from bert_tf.text.corpus import INPUT_FORMATS

_FORMAT_HELP = {
    "sentences": "one sentence per line, blank lines between documents (the original format)",
    "text": "raw text, a document per file, split into sentences",
    "bible": "the embedded World English Bible (no --input_file)",
    "tfds": "a prepared TFDS dataset (--tfds_name, --tfds_data_dir)",
}
_INPUT_FILE_HELP = "Input raw text file (or comma-separated list of files and globs)."


def _input_format(formats):
    """The `input_format` field that accepts `formats`."""
    return field_option("sentences", "; ".join(f"{name}: {_FORMAT_HELP[name]}" for name in formats) + ".",
                        choices=formats)


@dataclasses.dataclass(frozen=True)
class FileCorpus(Section):
    """Text files in one of the formats `bert_tf.text.corpus` reads (what the Beam pipeline reads in parallel).

    Example:
    >>> FileCorpus(input_file="corpus/*.txt", input_format="text").input_format
    'text'
    """

    SECTION = "corpus"
    input_file: Optional[str] = field_option(None, _INPUT_FILE_HELP)
    input_format: str = _input_format(INPUT_FORMATS)

    def _rules(self):
        formats = self.formats()
        return (("input_format", self.input_format in formats, f"must be one of {', '.join(formats)}"),)

    @classmethod
    def formats(cls):
        """The formats this corpus class reads (its `input_format` field's choices).

        >>> Corpus.formats()
        ('sentences', 'text', 'bible', 'tfds')
        """
        return next(f for f in dataclasses.fields(cls) if f.name == "input_format").metadata["choices"]

    def read(self, counts):
        """The documents (an iterator of lists of sentences), counted into `counts`.

        Example:
        >>> documents = FileCorpus(input_file="corpus.txt").read(CorpusCounts())  # doctest: +SKIP
        """
        from bert_tf.text.corpus import read_documents

        if not self.input_file:
            raise InputError(f"--input_file is required with --input_format={self.input_format}"
                             + (" (or use --input_format=bible for the embedded corpus)." if "bible" in
                                self.formats() else ": the files to read (comma-separated globs)."))
        return read_documents(self.input_file, self.input_format, counts)


@dataclasses.dataclass(frozen=True)
class LocalCorpus(FileCorpus):
    """Text files, or the embedded Bible (`bert-vocab`'s corpus)."""

    input_format: str = _input_format(("sentences", "text", "bible"))

    def read(self, counts):
        if self.input_format == "bible":
            from bert_tf.text.bible import read_bible_documents
            return read_bible_documents(counts)
        return super().read(counts)


@dataclasses.dataclass(frozen=True)
class Corpus(LocalCorpus):
    """Text files, the embedded Bible or a prepared TFDS dataset (`bert-create-pretraining-data`'s corpus)."""

    input_format: str = _input_format(("sentences", "text", "bible", "tfds"))
    tfds_name: Optional[str] = field_option(None, "TFDS dataset name (with --input_format=tfds), e.g. "
                                                  "wikipedia/20230601.en.", group="TFDS input")
    tfds_data_dir: Optional[str] = field_option(None, "Directory the TFDS dataset was prepared into.",
                                                group="TFDS input")
    tfds_split: str = field_option("train", "TFDS split to read.", group="TFDS input")
    tfds_text_key: str = field_option("text", "TFDS feature holding a document's text.", group="TFDS input")

    def read(self, counts):
        if self.input_format != "tfds":
            return super().read(counts)
        if not self.tfds_name or not self.tfds_data_dir:
            raise InputError("--input_format=tfds needs --tfds_name and --tfds_data_dir (a prepared dataset).")
        from bert_tf.text.tfds_corpus import read_tfds_documents
        return read_tfds_documents(self.tfds_name, self.tfds_data_dir, counts, self.tfds_split, self.tfds_text_key)

    @property
    def files(self):
        """The corpus's own file patterns (None for the Bible and TFDS)."""
        return self.input_file if self.input_format in INPUT_FORMATS else None

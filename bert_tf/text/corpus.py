"""Corpus files -> documents (each a list of sentences, each a str), streamed, with counts of what was odd.

Two file formats:
- "sentences", the original's: one sentence per line, a blank line between documents. As the original does:
  lines split on "\\n" only, each line decoded as UTF-8 with undecodable bytes dropped
  (`convert_to_unicode(..., "ignore")`) and stripped; a blank line ends a document; a document runs on into the next
  file when a file does not end with a blank line; every blank line starts a new document, so runs of them yield
  empty documents, which the instance pipeline drops and counts (the original removes them silently).
- "text": raw text, one document per file, split into sentences by `split_sentences`.

The embedded default corpus (bert_tf/text/bible.py) and TFDS datasets (bert_tf/text/tfds_corpus.py) yield the
same documents.
"""

import dataclasses

from bert_tf.errors import InputError
from bert_tf.file_io import open_binary
from bert_tf.text.file_patterns import expand_file_patterns
from bert_tf.text.sentences import split_sentences


@dataclasses.dataclass
class CorpusCounts:
    """What the readers and the tokenizer met; printed in the summary.

    Example:
    >>> counts = CorpusCounts()
    >>> documents = list(read_documents("corpus.txt", "sentences", counts))  # doctest: +SKIP
    >>> counts.lines, counts.undecodable_lines  # doctest: +SKIP
    (1200, 0)
    """

    files: int = 0
    lines: int = 0
    undecodable_lines: int = 0     # lines (or texts) with bytes that are not UTF-8; those bytes were dropped
    documents: int = 0             # documents kept (one sentence with tokens or more)
    empty_documents: int = 0       # documents without any token, dropped (blank-line runs included)
    one_sentence_documents: int = 0  # kept; each chunk of them is a random next, as in the original
    sentences: int = 0             # sentences kept
    empty_sentences: int = 0       # lines without any token (e.g. only control characters), dropped
    tokens: int = 0
    word_segmented_sentences: int = 0  # sentences kept whose masking groups a word segmenter made
    word_fallback_sentences: int = 0   # ... of which the segmenter's words and the tokens disagreed: "##" groups

    def summary_lines(self):
        lines = [f"corpus: {self.documents} documents, {self.sentences} sentences, {self.tokens} tokens "
                 f"from {self.files} input(s)",
                 f"dropped: {self.empty_documents} empty documents, {self.empty_sentences} sentences without "
                 f"tokens; {self.undecodable_lines} lines with undecodable bytes (bytes dropped); "
                 f"{self.one_sentence_documents} one-sentence documents kept"]
        if self.word_segmented_sentences:
            share = self.word_fallback_sentences / self.word_segmented_sentences
            lines.append(f"word segmenter: {self.word_fallback_sentences} of {self.word_segmented_sentences} "
                         f"sentences ({share:.2%}) fell back to token masking (its words and the tokens disagreed)")
        return lines


# Bytes at the start of each corpus file checked for NUL (a binary file has one within a few bytes).
_BINARY_CHECK_BYTES = 1 << 16


def decode(data, counts):
    """UTF-8 text of `data`, undecodable bytes dropped (and counted), as the original's convert_to_unicode."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        counts.undecodable_lines += 1
        return data.decode("utf-8", "ignore")


def check_not_binary(path, head):
    """Raises an InputError when the first bytes of a corpus file hold a NUL byte, which text never does: the file
    is binary (compressed, TFRecords, an image) or UTF-16, and would be read as garbage."""
    position = head.find(b"\x00")
    if position >= 0:
        raise InputError(f"input_file {path} is not UTF-8 text (a NUL byte at offset {position}): it looks binary "
                         f"(compressed, TFRecords, ...) or UTF-16; decompress or convert it to UTF-8 text first.")


def read_sentence_documents(files, counts):
    """Documents of files in the original format (one sentence per line, blank line between documents)."""
    document = []
    for path in files:
        counts.files += 1
        with open_binary(path) as f:
            checked = 0
            for raw in f:
                if checked < _BINARY_CHECK_BYTES:
                    check_not_binary(path, raw)
                    checked += len(raw)
                counts.lines += 1
                line = decode(raw, counts).strip()
                if not line:
                    yield document
                    document = []
                else:
                    document.append(line)
    yield document


def read_text_documents(files, counts):
    """One document per raw text file, split into sentences."""
    for path in files:
        counts.files += 1
        with open_binary(path) as f:
            data = f.read()
        check_not_binary(path, data[:_BINARY_CHECK_BYTES])
        counts.lines += data.count(b"\n") + 1
        yield split_sentences(decode(data, counts))


INPUT_FORMATS = ("sentences", "text")


def read_documents(input_file, input_format, counts):
    """Documents of `--input_file` (comma-separated globs) in the given format."""
    if input_format not in INPUT_FORMATS:
        raise InputError(f"input_format={input_format!r} is unknown: use one of {INPUT_FORMATS} for files.")
    files = expand_file_patterns(input_file)
    reader = read_sentence_documents if input_format == "sentences" else read_text_documents
    return reader(files, counts)

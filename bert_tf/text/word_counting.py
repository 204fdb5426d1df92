"""Counting the words of a corpus as the tokenizer splits them, in parallel processes.

The words are those of `split_words` (whitespace, then each punctuation mark alone) of normalized text. Normalizing
is character by character and turns whitespace into spaces (but a few control characters, deleted first here), so
the raw text is split on whitespace first and only its distinct chunks are normalized and split further: the
per-character work is `str.split` and `Counter`, in C. Sentences go to worker processes in chunks of about
`CHUNK_CHARACTERS`; each returns the counts of its chunk (a text of one chunk is counted in this process).
"""

import collections
import dataclasses
import functools
import itertools
import multiprocessing
import os
import re
import sys
import time
import unicodedata

from absl import logging

from bert_tf.text.normalization import is_punctuation

# Characters of text sent to a worker at once: large enough that sending and merging costs little beside the
# counting, small enough that both processes stay busy to the end.
CHUNK_CHARACTERS = 4_000_000
# Seconds between the progress lines.
PROGRESS_SECONDS = 10.0


@functools.lru_cache(maxsize=None)
def word_pattern():
    """The regular expression whose matches are `split_words`'s words: one punctuation mark, or a run of characters
    that are neither whitespace nor punctuation (`\\s` is `str.isspace`, on which `str.split` splits).

    >>> word_pattern().findall("don't stop, 中文")
    ['don', "'", 't', 'stop', ',', '中文']
    """
    marks = [chr(cp) for cp in range(sys.maxunicode + 1)
             if (cp < 128 or unicodedata.category(chr(cp)).startswith("P")) and is_punctuation(chr(cp))]
    marks = "".join(re.escape(char) for char in marks)
    return re.compile(f"[{marks}]|[^\\s{marks}]+")


@functools.lru_cache(maxsize=None)
def _whitespace():
    return [chr(cp) for cp in range(sys.maxunicode + 1) if chr(cp).isspace()]


def _deleted_whitespace(normalize_text):
    """The whitespace characters (`str.isspace`) that `normalize_text` deletes instead of turning into a space
    (control characters such as U+001C), as a pattern: they must go before the text is split on whitespace."""
    deleted = [char for char in _whitespace() if normalize_text(f"a{char}b").split() == ["ab"]]
    return re.compile("[" + "".join(re.escape(char) for char in deleted) + "]") if deleted else None


@dataclasses.dataclass
class WordCounts:
    """How often each word occurs, and in how many sentences.

    Example:
    >>> counts = count_text(["Hello, hello!"], lambda text: text.lower())
    >>> counts.words["hello"], counts.sentences
    (2, 1)
    """

    words: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    sentences: int = 0

    def merge(self, other):
        self.words.update(other.words)
        self.sentences += other.sentences
        return self



def count_text(sentences, normalize_text):
    """`WordCounts` of `sentences` (a list of str) normalized by `normalize_text` (str -> str, character by
    character as `normalize`): see the module."""
    text = "\n".join(sentences)
    deleted = _deleted_whitespace(normalize_text)
    if deleted is not None:
        text = deleted.sub("", text)
    counts = WordCounts(sentences=len(sentences))
    words, pattern = counts.words, word_pattern()
    for chunk, count in collections.Counter(text.split()).items():
        for word in pattern.findall(normalize_text(chunk)):
            words[word] += count
    return counts


def count_words(sentences, normalize_text, processes=None):
    """`WordCounts` of an iterable of sentences (str), normalized by `normalize_text` (a picklable str -> str, e.g.
    a `functools.partial` of `normalize`), counted in `processes` worker processes (default: the CPUs this process
    may use; 1 counts here), with a progress line every `PROGRESS_SECONDS`.

    Example:
    >>> import functools
    >>> from bert_tf.text.normalization import normalize
    >>> count_words(["Das Café", "das"], functools.partial(normalize, do_lower_case=True)).words["das"]
    2
    """
    processes = processes or len(os.sched_getaffinity(0))
    progress = _Progress()
    total = WordCounts()
    chunks = _chunks(sentences, progress)
    first = [chunk for chunk in (next(chunks, None), next(chunks, None)) if chunk is not None]
    count = functools.partial(count_text, normalize_text=normalize_text)
    if processes <= 1 or len(first) < 2:  # a text of one chunk is counted before a process would have started
        for counts in map(count, itertools.chain(first, chunks)):
            total.merge(counts)
    else:
        # Fresh processes ("spawn"): forking a process that runs TensorFlow's threads is not safe.
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            for counts in pool.imap_unordered(count, itertools.chain(first, chunks)):
                total.merge(counts)
    progress.done(len(total.words))
    return total


def _chunks(sentences, progress):
    chunk, characters = [], 0
    for sentence in sentences:
        chunk.append(sentence)
        characters += len(sentence)
        if characters >= CHUNK_CHARACTERS:
            progress.read(len(chunk), characters)
            yield chunk
            chunk, characters = [], 0
    if chunk:
        progress.read(len(chunk), characters)
        yield chunk


class _Progress:
    """Logs how much text was read every `PROGRESS_SECONDS`, and when the counting is done."""

    def __init__(self):
        self.started = self.last = time.perf_counter()
        self.sentences = self.characters = 0

    def read(self, sentences, characters):
        self.sentences += sentences
        self.characters += characters
        now = time.perf_counter()
        if now - self.last >= PROGRESS_SECONDS:
            logging.info("Counting words: %d sentences (%.1f M characters) read in %.0f s.", self.sentences,
                         self.characters / 1e6, now - self.started)
            self.last = now

    def done(self, distinct_words):
        logging.info("Counted %d distinct words in %d sentences (%.1f M characters) in %.1f s.", distinct_words,
                     self.sentences, self.characters / 1e6, time.perf_counter() - self.started)

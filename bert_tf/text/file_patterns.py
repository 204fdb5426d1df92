"""File patterns -> files: the one expander of `--input_file` values, for corpora and TFRecords alike.

The original's `--input_file`: comma-separated paths or globs. Patterns keep the order given (a corpus is read in
that order, as the original reads it); each glob's matches are sorted (filesystems list in any order); a file
named twice is read once; a pattern that matches nothing is an error naming it.
"""

import errno
import os

from bert_tf.errors import InputError, InputFileNotFoundError
from bert_tf.file_io import is_directory, is_remote

# A pattern with none of these is a plain path, checked with the standard library (no TensorFlow start-up).
_GLOB_CHARACTERS = frozenset("*?[")


def expand_file_patterns(patterns, flag="input_file"):
    """The files a pattern, a comma-separated string of patterns, or a list of them name.

    Example:
    >>> expand_file_patterns("corpus/wiki-*.txt,corpus/books.txt")  # doctest: +SKIP
    ['corpus/wiki-0.txt', 'corpus/wiki-1.txt', 'corpus/books.txt']
    """
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    split = [p.strip() for item in patterns for p in os.fspath(item).split(",") if p.strip()]
    if not split:
        raise InputError(f"{flag}={patterns!r} names no file: pass a path, a glob or a comma-separated list of them.")
    files = {}  # an ordered set
    for pattern in split:
        matched = _matching(pattern)
        if not matched:
            raise InputFileNotFoundError(f"{flag} pattern {pattern!r} matches no file: check the path (globs are "
                                         f"expanded here, so quote them in the shell).")
        if matched == [pattern] and is_directory(pattern):  # a plain path; globs are left unchecked (cost)
            raise IsADirectoryError(errno.EISDIR, "Is a directory", pattern)
        files.update(dict.fromkeys(matched))
    return list(files)


def _matching(pattern):
    if is_remote(pattern) or _GLOB_CHARACTERS & set(pattern):
        import tensorflow as tf  # its glob rules, the same for every filesystem
        return sorted(tf.io.gfile.glob(pattern))
    return [pattern] if os.path.exists(pattern) else []

"""Writing serialized examples to TFRecord files, spread over the output files as the original does, atomically.

The original writes instance k to output file k mod (number of files). `--output_file` is a comma-separated list
of paths, as in the original, or a shard pattern "PATH@N" that names N files PATH-00000-of-0000N ...
"""

import os
import re

import tensorflow as tf

from bert_tf.errors import InputError

_SHARD_PATTERN = re.compile(r"^(?P<path>.+)@(?P<count>\d+)$")


def expand_output_files(output_file):
    """The files that `--output_file` names.

    Example:
    >>> expand_output_files("out/train.tfrecord@3")
    ['out/train.tfrecord-00000-of-00003', 'out/train.tfrecord-00001-of-00003', 'out/train.tfrecord-00002-of-00003']
    >>> expand_output_files("a.tfrecord,b.tfrecord")
    ['a.tfrecord', 'b.tfrecord']
    """
    output_file = os.fspath(output_file)
    match = _SHARD_PATTERN.match(output_file)
    if match:
        count = int(match["count"])
        if count < 1:
            raise ValueError(f"output_file={output_file!r} asks for {count} files: use PATH@N with N >= 1.")
        return [f"{match['path']}-{i:05d}-of-{count:05d}" for i in range(count)]
    files = [p.strip() for p in output_file.split(",") if p.strip()]
    if not files:
        raise ValueError(f"output_file={output_file!r} names no file: pass paths separated by commas or PATH@N.")
    if len(set(files)) != len(files):
        raise ValueError(f"output_file={output_file!r} names a file twice: each output path must be distinct.")
    return files


def check_outputs_spare_inputs(output_files, input_files, what="an input"):
    """Raises an InputError when an output path is one of the input files (compared as real paths for local files),
    before anything is written.

    Example:
    >>> check_outputs_spare_inputs(["corpus.txt"], ["corpus.txt"])
    Traceback (most recent call last):
    ...
    bert_tf.errors.InputError: output_file 'corpus.txt' is an input file too ('corpus.txt'): writing it would
    destroy an input. Choose another output path.
    """
    def real(path):
        path = os.fspath(path)
        return path if "://" in path else os.path.realpath(path)

    inputs = {real(path): os.fspath(path) for path in input_files}
    for output in output_files:
        if real(output) in inputs:
            raise InputError(f"output_file {os.fspath(output)!r} is an input file too ({inputs[real(output)]!r}): "
                             f"writing it would destroy {what}. Choose another output path.")


class RoundRobinWriter:
    """TFRecord writers over several files; record k goes to file k mod len(files), as in the original.

    Records go to `PATH.partial` files, renamed to their paths when the writer closes after success; after an
    error (or `discard`) the partial files are removed. So an output path holds a complete file or nothing, and an
    interrupted run leaves at most `.partial` files.

    Example:
    >>> with RoundRobinWriter(["a.tfrecord", "b.tfrecord"], gzip=False) as writer:  # doctest: +SKIP
    ...     writer.write(serialized_example)
    >>> writer.records_per_file  # doctest: +SKIP
    [1, 0]
    """

    def __init__(self, paths, gzip=False):
        self.paths = [os.fspath(path) for path in paths]
        options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip else "")
        self._writers = []
        for path in self.paths:
            parent = os.path.dirname(path)
            if parent:
                tf.io.gfile.makedirs(parent)
            self._writers.append(tf.io.TFRecordWriter(partial_path(path), options))
        self.records_per_file = [0] * len(self.paths)
        self._next = 0

    def write(self, record):
        self._writers[self._next].write(record)
        self.records_per_file[self._next] += 1
        self._next = (self._next + 1) % len(self._writers)

    def close(self):
        """Completes the files: each partial file is renamed to its path."""
        for writer in self._writers:
            writer.close()
        for path in self.paths:
            tf.io.gfile.rename(partial_path(path), path, overwrite=True)
        self._writers = []

    def discard(self):
        """Drops what was written: the partial files are removed and no output path is touched."""
        for writer in self._writers:
            writer.close()
        for path in self.paths:
            if tf.io.gfile.exists(partial_path(path)):
                tf.io.gfile.remove(partial_path(path))
        self._writers = []

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.close()
        else:
            self.discard()


def partial_path(path):
    """Where a file is written before it is complete."""
    return f"{path}.partial"

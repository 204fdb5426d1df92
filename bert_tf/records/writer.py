"""Writing serialized examples to TFRecord files, spread over the output files as the original does, atomically.

The original writes instance k to output file k mod (number of files). `--output_file` is a comma-separated list
of paths, as in the original, or a shard pattern "PATH@N" that names N files PATH-00000-of-0000N ...
"""

import os
import re

import tensorflow as tf

from bert_tf.atomic_output import AtomicFile, CommitOnSuccess
from bert_tf.errors import InputError
from bert_tf.file_io import is_remote

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
            raise InputError(f"output_file={output_file!r} asks for {count} files: use PATH@N with N >= 1.")
        return [f"{match['path']}-{i:05d}-of-{count:05d}" for i in range(count)]
    files = [p.strip() for p in output_file.split(",") if p.strip()]
    if not files:
        raise InputError(f"output_file={output_file!r} names no file: pass paths separated by commas or PATH@N.")
    if len(set(files)) != len(files):
        raise InputError(f"output_file={output_file!r} names a file twice: each output path must be distinct.")
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
        return path if is_remote(path) else os.path.realpath(path)

    inputs = {real(path): os.fspath(path) for path in input_files}
    for output in output_files:
        if real(output) in inputs:
            raise InputError(f"output_file {os.fspath(output)!r} is an input file too ({inputs[real(output)]!r}): "
                             f"writing it would destroy {what}. Choose another output path.")


class RoundRobinWriter(CommitOnSuccess):
    """TFRecord writers over several files; record k goes to file k mod len(files), as in the original.

    Each file is an `AtomicFile`: records go to a partial file beside its path, renamed to the path when the writer
    closes after success; after an error (or `discard`) the partial files are removed. So an output path holds a
    complete file or nothing, and an interrupted run leaves at most partial files. A character device
    (`/dev/null`) is written through; a FIFO, socket or block device is refused before any file is opened.

    Example:
    >>> with RoundRobinWriter(["a.tfrecord", "b.tfrecord"], gzip=False) as writer:  # doctest: +SKIP
    ...     writer.write(serialized_example)
    >>> writer.records_per_file  # doctest: +SKIP
    [1, 0]
    """

    def __init__(self, paths, gzip=False):
        self.paths = [os.fspath(path) for path in paths]
        options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip else "")
        self._outputs = [AtomicFile(path) for path in self.paths]  # every path is checked before one is opened
        self._writers = [tf.io.TFRecordWriter(output.write_path, options) for output in self._outputs]
        self.records_per_file = [0] * len(self.paths)
        self._next = 0

    def write(self, record):
        self._writers[self._next].write(record)
        self.records_per_file[self._next] += 1
        self._next = (self._next + 1) % len(self._writers)

    def close(self):
        """Completes the files: each is flushed and put in place; when one fails, the ones after it are dropped."""
        pending, self._writers = list(zip(self._outputs, self._writers)), []
        for index, (output, writer) in enumerate(pending):
            try:
                output.commit(close=writer.close)
            except BaseException:
                for later, later_writer in pending[index + 1:]:
                    later.discard(close=later_writer.close)
                raise

    commit = close

    def discard(self):
        """Drops what was written: the partial files are removed and no output path is touched."""
        pending, self._writers = list(zip(self._outputs, self._writers)), []
        for output, writer in pending:
            output.discard(close=writer.close)

    def explained(self, error):
        """A write that failed on a full device, as one line naming it; any other error as it is."""
        for output in self._outputs:
            explained = output.explained(error)
            if explained is not error:
                return explained
        return error



"""Writing serialized examples to TFRecord files, spread over the output files as the original does.

The original writes instance k to output file k mod (number of files). `--output_file` is a comma-separated list
of paths, as in the original, or a shard pattern "PATH@N" that names N files PATH-00000-of-0000N ...
"""

import os
import re

import tensorflow as tf

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


class RoundRobinWriter:
    """TFRecord writers over several files; record k goes to file k mod len(files), as in the original.

    Example:
    >>> with RoundRobinWriter(["a.tfrecord", "b.tfrecord"], gzip=False) as writer:
    ...     writer.write(serialized_example)
    >>> writer.records_per_file
    [1, 0]
    """

    def __init__(self, paths, gzip=False):
        self.paths = list(paths)
        options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip else "")
        self._writers = []
        for path in self.paths:
            parent = os.path.dirname(path)
            if parent:
                tf.io.gfile.makedirs(parent)
            self._writers.append(tf.io.TFRecordWriter(path, options))
        self.records_per_file = [0] * len(self.paths)
        self._next = 0

    def write(self, record):
        self._writers[self._next].write(record)
        self.records_per_file[self._next] += 1
        self._next = (self._next + 1) % len(self._writers)

    def close(self):
        for writer in self._writers:
            writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

"""Reading a user's file with the standard library, and with `tf.io.gfile` only where the path asks for it
(`gs://...`, `hdfs://...`): configs and corpora load, and commands check their inputs, without importing
TensorFlow.

Example:
>>> is_remote("gs://bucket/recipe.yaml"), is_remote("configs/pretrain/demo_cpu.yaml")
(True, False)
"""

import os


def is_remote(path):
    """Whether `path` names a filesystem that only TensorFlow's gfile reaches (a URL such as gs://)."""
    return "://" in os.fspath(path)


def file_exists(path):
    """Whether `path` exists (a remote path is asked through tf.io.gfile)."""
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def is_directory(path):
    """Whether `path` is a directory (a remote path is asked through tf.io.gfile)."""
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.isdir(path)
    return os.path.isdir(path)


def open_binary(path):
    """`path` opened for reading bytes."""
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def read_text(path):
    """The whole of `path` as UTF-8 text."""
    with open_binary(path) as f:
        return f.read().decode("utf-8")

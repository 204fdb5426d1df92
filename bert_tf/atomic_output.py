"""Writing outputs atomically, and what an output path may be: the one owner of the rename that puts an output in
place (no other module renames over an output; tests/test_atomic_output.py greps the package for it).

A file is written under a temporary name beside its path and renamed when complete, so an interrupted write leaves
the old file or the new one, never half of one; a directory is written the same way as a whole. The path is looked
at first, because a rename over a device node replaces the node (as root, `/dev/null` would become a regular file
and every program writing there would fill it):

- absent or a regular file: a file output is written beside it, then renamed into place;
- absent or a directory: a directory output is written beside it, then renamed into place;
- a character device (`/dev/null`): a file output is written through, with no rename (a full device such as
  `/dev/full` ends in one line naming ENOSPC); a directory output is refused;
- a FIFO, socket or block device: refused, without opening it (opening a FIFO for writing blocks until a reader
  comes; a block device would lose its data).

Refusals raise `InputError` (exit status 2) naming the path and what it is. Paths on other TensorFlow filesystems
(gs://, ram://) hold no device nodes and are written through `tf.io.gfile` the same way.
"""

import contextlib
import errno
import os
import stat

import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.file_io import is_remote

# The nodes an output may not be: what the user reads, and why a file output is not written there.
_REFUSED = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket", stat.S_IFBLK: "a block device"}
_WHY_NOT = {"a FIFO (named pipe)": "opening it to write would block until a reader came",
            "a socket": "a socket cannot be opened as a file",
            "a block device": "writing there would overwrite the device's data"}


def partial_path(path):
    """Where an output is written until it is complete: beside it, named after it and this process (so two
    processes writing one output never share a temporary name).

    Example:
    >>> partial_path("out/train.tfrecord") == f"out/train.tfrecord.partial-{os.getpid()}"
    True
    """
    return f"{path}.partial-{os.getpid()}"


def node_kind(path):
    """What `path` is now: "absent", "file", "directory", "character device", or for the nodes an output may not
    be, the words naming them. Symbolic links are followed, as a write would follow them.

    Example:
    >>> node_kind("/dev/null"), node_kind("/no/such/path")
    ('character device', 'absent')
    """
    path = os.fspath(path)
    if is_remote(path):
        if tf.io.gfile.isdir(path):
            return "directory"
        return "file" if tf.io.gfile.exists(path) else "absent"
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISCHR(mode):
        return "character device"
    return _REFUSED.get(stat.S_IFMT(mode), "a special file")


def _refuse_file(path, kind):
    raise InputError(f"{path} is {kind}, not a regular file ({_WHY_NOT.get(kind, 'it cannot hold a file')}): pass "
                     f"a file path for the output (or /dev/null to discard it).")


def check_output_directory(directory):
    """Refuses, with one line, a directory output whose path (or nearest existing parent) is not a directory:
    nothing can be written inside a device, FIFO, socket or file.

    Example:
    >>> check_output_directory("/dev/null")
    Traceback (most recent call last):
    ...
    bert_tf.errors.InputError: /dev/null is a character device, not a directory: pass a new or empty directory
    path for the output.
    """
    directory = os.fspath(directory)
    if is_remote(directory):
        return
    existing = os.path.abspath(directory)
    while node_kind(existing) == "absent" and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    kind = node_kind(existing)
    if kind in ("directory", "absent"):
        return
    shown = directory if existing == os.path.abspath(directory) else existing
    words = {"file": "a file", "character device": "a character device"}.get(kind, kind)
    raise InputError(f"{shown} is {words}, not a directory: pass a new or empty directory path for the output.")


def make_directories(directory):
    """`tf.io.gfile.makedirs` after `check_output_directory`.

    Example:
    >>> make_directories("ram://made/here")
    """
    check_output_directory(directory)
    tf.io.gfile.makedirs(directory)


def check_output_file(path):
    """Refuses, with one line, a file output at a path that cannot hold one (a directory, FIFO, socket or block
    device), without opening it; returns what the path is now (`node_kind`). A command calls it before its work
    starts; `AtomicFile` calls it again when it is made.

    Example:
    >>> check_output_file("/dev/null"), check_output_file("/no/such/out.tfrecord")
    ('character device', 'absent')
    """
    kind = node_kind(path)
    if kind == "directory":
        raise InputError(f"{path} is a directory: pass a file path for the output.")
    if kind not in ("absent", "file", "character device"):
        _refuse_file(path, kind)
    return kind


class CommitOnSuccess:
    """A context manager over outputs that are complete or absent: when the block ends without an error it calls
    `commit()`; otherwise `discard()`, and the error goes on as `explained(error)` tells it (e.g. a full device as
    one `InputError`). Subclasses define the three."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.commit()
            return
        self.discard()
        explained = self.explained(value) if isinstance(value, Exception) else value
        if explained is not value:
            raise explained from value


class AtomicFile(CommitOnSuccess):
    """One output file: `write_path` is where to write it; `commit()` puts it in place, `discard()` drops it.

    A regular (or absent) path is written at a temporary name beside it and renamed by `commit`; a character
    device is written through (`write_path` is the device), and a full one ends in an `InputError` naming ENOSPC;
    a FIFO, socket or block device is refused when the `AtomicFile` is made, before anything is opened. As a
    context manager it commits when the block ends without an error and discards otherwise.

    Example:
    >>> with AtomicFile("ram://atomic/notes.txt") as output:
    ...     with tf.io.gfile.GFile(output.write_path, "w") as f:
    ...         _ = f.write("complete")
    >>> tf.io.gfile.GFile("ram://atomic/notes.txt").read()
    'complete'
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        kind = check_output_file(self.path)
        self.through_device = kind == "character device"
        parent = os.path.dirname(self.path)
        if parent and not self.through_device:
            make_directories(parent)
        self.write_path = self.path if self.through_device else partial_path(self.path)

    def commit(self, close=None):
        """Calls `close` (the writer's close, which flushes), then renames the complete file into place."""
        try:
            if close is not None:
                close()
        except Exception as error:
            self.discard()
            explained = self.explained(error)
            if explained is error:
                raise
            raise explained from error
        if not self.through_device:
            tf.io.gfile.rename(self.write_path, self.path, overwrite=True)

    def discard(self, close=None):
        """Calls `close`, then removes what was written (a device written through keeps what it took)."""
        if close is not None:
            # What is dropped need not be flushed: an error closing it (a full device again) is not the story.
            with contextlib.suppress(Exception):
                close()
        if not self.through_device and tf.io.gfile.exists(self.write_path):
            tf.io.gfile.remove(self.write_path)

    def explained(self, error):
        """`error` as the user should read it: a full character device written through as one `InputError`
        naming ENOSPC; any other error as it is."""
        no_space = getattr(error, "errno", None) == errno.ENOSPC or "No space left on device" in str(error)
        about_this = getattr(error, "filename", None) in (None, self.path) or self.path in str(error)
        if self.through_device and no_space and about_this:
            return InputError(f"{self.path}: No space left on device (ENOSPC): the character device took no more "
                              f"output; write to a file on a disk with space (or /dev/null to discard it).")
        return error


def write_text_atomically(path, text):
    """Writes `text` to `path` as one `AtomicFile`.

    >>> write_text_atomically("ram://example/notes.txt", "hello")
    >>> tf.io.gfile.GFile("ram://example/notes.txt").read()
    'hello'
    """
    with AtomicFile(path) as output:
        with tf.io.gfile.GFile(output.write_path, "w") as f:
            f.write(text)


@contextlib.contextmanager
def directory_written_atomically(directory):
    """Yields a new empty directory beside `directory` to write into; when the block ends without an error it
    takes the place of `directory` (absent, or a folder the caller found empty or free to replace), else it is
    removed. So an interrupted export never leaves a half-written directory under that name, and a rerun is not
    refused. A `directory` that is a file or a node is refused first (`check_output_directory`).

    >>> import tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "export")
    >>> with directory_written_atomically(target) as partial:
    ...     write_text_atomically(os.path.join(partial, "a.txt"), "complete")
    >>> os.listdir(target), os.path.exists(target + f".partial-{os.getpid()}")
    (['a.txt'], False)
    """
    check_output_directory(directory)
    partial = partial_path(directory.rstrip("/"))
    tf.io.gfile.makedirs(partial)
    try:
        yield partial
        if tf.io.gfile.isdir(directory):
            tf.io.gfile.rmtree(directory)
        tf.io.gfile.rename(partial, directory)
    finally:
        if tf.io.gfile.exists(partial):
            tf.io.gfile.rmtree(partial)

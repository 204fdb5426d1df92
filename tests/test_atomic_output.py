"""The one owner of atomic writes (bert_tf/atomic_output.py): no other module renames over an output, a FIFO is
refused without blocking, and an interrupted write leaves the old file. The table of nodes each command's output
may be (and the line each ends in) is in test_bad_inputs.py."""

import os
import pathlib
import re
import signal

import pytest

from bert_tf.atomic_output import AtomicFile, write_text_atomically
from bert_tf.errors import InputError

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "bert_tf"
OWNER = PACKAGE / "atomic_output.py"
# The calls that put a file or directory in the place of another.
RENAMES = re.compile(r"\bos\.(replace|rename|renames)\(|\bgfile\.rename\(|\bshutil\.move\(|\.rename\(")


def test_no_module_but_the_owner_renames_over_an_output():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == OWNER:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if RENAMES.search(line.split("#")[0]):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert not found, "rename outputs through bert_tf.atomic_output:\n" + "\n".join(found)
    assert RENAMES.search("os.replace(final + '.part', final)") and RENAMES.search("tf.io.gfile.rename(a, b)")


def test_a_fifo_is_refused_without_being_opened(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # Opening a FIFO for writing blocks until a reader comes: the alarm turns a hang into a failure.
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("writing to the FIFO blocked"))
    signal.alarm(10)
    try:
        with pytest.raises(InputError, match=f"{fifo} is a FIFO"):
            write_text_atomically(fifo, "text")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert fifo.is_fifo()


def test_an_interrupted_write_leaves_the_old_file_and_no_partial_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("old\n")
    with pytest.raises(RuntimeError):
        with AtomicFile(path) as output:
            pathlib.Path(output.write_path).write_text("half")
            raise RuntimeError("killed")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["vocab.txt"]


def test_a_directory_is_no_file_output(tmp_path):
    with pytest.raises(InputError, match=f"{tmp_path} is a directory: pass a file path"):
        AtomicFile(tmp_path)

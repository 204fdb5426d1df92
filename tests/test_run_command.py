"""One function runs a command, `bert_tf.cli.app.run_command`: in the test process (what `helpers.run_cli` does by
default) and in a console script's process, where its `console` switch adds the console's steps only: TensorFlow
started quietly with one line naming the devices, and a run stopped by a signal (exit 130 or 143) ended at once."""

import io
import os
import subprocess
import sys
import time

import pytest

from bert_tf.cli import vocab
from bert_tf.cli.app import run_command
from helpers import REPO, run_cli

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def test_a_command_in_the_process_prints_and_exits_as_in_its_own_process(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat.\nthe dog sat on the log.\n\n" * 50)
    for args in ([f"--input_file={corpus}", "--vocab_size=40", f"--output_file={tmp_path}/vocab.txt"],
                 [f"--input_file={tmp_path}/missing.txt", f"--output_file={tmp_path}/v.txt"],
                 ["--vocab_size=x", f"--output_file={tmp_path}/v.txt"],
                 [f"--input_file={corpus}", "--set=vocab_sise=40", f"--output_file={tmp_path}/v.txt"]):
        inside, child = run_cli("vocab", *args), run_cli("vocab", *args, process=True)
        assert (inside.returncode, inside.stdout) == (child.returncode, child.stdout), args
        if child.returncode:  # the error line (a success ends in log lines that carry their time)
            assert inside.stderr.splitlines()[-1:] == child.stderr.splitlines()[-1:], (inside.stderr, child.stderr)
        else:
            assert child.stderr.splitlines()[0] == "bert-vocab: running on the CPU (no GPU found)"
            assert "Learned" in inside.stderr and "Learned" in child.stderr
    assert child.returncode == 2 and "Did you mean 'vocab_size'?" in child.stderr
    # --help is answered by the same function: the same page and exit 0 in both, and nothing on stderr.
    inside, child = run_cli("vocab", "--help"), run_cli("vocab", "--help", process=True)
    assert (inside.returncode, inside.stdout, inside.stderr) == (child.returncode, child.stdout, child.stderr) == (
        0, inside.stdout, ""), child.stderr[-2000:]
    assert inside.stdout.startswith("usage: bert-vocab ") and "--vocab_size" in inside.stdout


def test_run_command_returns_the_exit_code_and_writes_the_error_line():
    stderr = io.StringIO()
    assert run_command(vocab.COMMAND, ["bert-vocab"], stderr) == 2
    assert stderr.getvalue() == "bert-vocab: error: --output_file is required: pass --output_file=... (--helpshort " \
                                "lists the flags).\n"


# A command whose run stops as on SIGTERM (exit 143) while a thread that interpreter teardown would wait for (as for
# TensorFlow's thread pools) still runs.
STOPPED_COMMAND = """
import dataclasses, sys, threading, time
from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.config_schema import Section

@dataclasses.dataclass(frozen=True)
class Nothing(Section):
    pass

def main(config):
    threading.Thread(target=time.sleep, args=(300,)).start()
    print("saved", flush=True)
    return 143

COMMAND = Command(Nothing, main)
if __name__ == "__main__":
    if sys.argv[1:] == ["--in_process"]:
        sys.exit(app.run_command(COMMAND, ["bert-stopped"]) - 143)  # returns, and waits for the thread
    app.run(COMMAND)
"""


def test_the_console_switch_names_the_devices_quietly_and_ends_a_stopped_run_at_once(tmp_path):
    (tmp_path / "stopped.py").write_text(STOPPED_COMMAND)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "stopped"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=250, env={**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"})
    seconds = time.monotonic() - started
    assert done.returncode == 143 and done.stdout == "saved\n", done.stderr[-3000:]
    # TensorFlow was started quietly (none of its C++ start-up lines) and named the devices, before `main`.
    assert done.stderr.splitlines() == ["bert-stopped: running on the CPU (no GPU found)"], done.stderr[-3000:]
    assert seconds < 200, f"the process took {seconds:.0f} s to end: it waited for the thread"
    # Without the switch the same function returns the code and leaves the process to its caller.
    in_process = subprocess.Popen([sys.executable, "-m", "stopped", "--in_process"], cwd=tmp_path, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env={**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"})
    try:
        assert in_process.stdout.readline() == "saved\n"
        time.sleep(2)
        assert in_process.poll() is None, in_process.communicate()[1][-3000:]
    finally:
        in_process.kill()
        in_process.communicate()

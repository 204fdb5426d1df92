"""A command run in the test process (`bert_tf.cli.command.run_command`, what `helpers.run_cli` does by default)
gives what the same command gives as a user's process: the exit code, stdout, and the one line it ends with (the
process prints the devices it runs on first)."""

import io

from bert_tf.cli import vocab
from bert_tf.cli.command import run_command
from helpers import run_cli


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
            assert "Learned" in inside.stderr.splitlines()[-1] and "Learned" in child.stderr.splitlines()[-1]
    assert child.returncode == 2 and "Did you mean 'vocab_size'?" in child.stderr


def test_run_command_returns_the_exit_code_and_writes_the_error_line():
    stderr = io.StringIO()
    assert run_command(vocab.COMMAND, ["bert-vocab"], stderr) == 2
    assert stderr.getvalue() == "bert-vocab: error: --output_file is required: pass --output_file=... (--helpshort " \
                                "lists the flags).\n"

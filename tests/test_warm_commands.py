"""The warm parent the CLI tests fork their commands from (`warm_commands`): its children start with TensorFlow
imported, and a command run there prints and exits as the same command in a fresh interpreter does."""

from helpers import run_cli
from warm_commands import forked_child_has_imported


def test_children_of_the_warm_parent_start_with_tensorflow_imported():
    # Python 3.11's fork server ignores a preload it cannot import: every row would pay TensorFlow's import again.
    assert forked_child_has_imported("warm_imports")
    assert forked_child_has_imported("tensorflow")
    assert not forked_child_has_imported("bert_tf.cli.export")  # each command's flags are defined by its own run


def test_a_command_forked_warm_prints_what_it_prints_cold(tmp_path):
    args = ("export", f"--model_dir={tmp_path}/missing", f"--output_dir={tmp_path}/exported")
    warm, cold = run_cli(*args), run_cli(*args, cold=True)  # cold: the reference a user's process gives
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.returncode == 2 and warm.stderr.splitlines() == [
        "bert-export: running on the CPU (no GPU found)",
        f"bert-export: error: --model_dir {tmp_path}/missing does not exist: pass the directory bert-convert or "
        "bert-pretrain wrote (bert_config.json, vocab.txt, ckpt-N)."]

"""Commands that answer at once: `--help`, a mistyped flag and a missing input file are answered by the installed
console scripts before TensorFlow is imported (each row runs with a `tensorflow` package on PYTHONPATH that fails
when imported, so a path that reaches TensorFlow fails the row), and `--help` lists the command's own flags and
exits 0 (absl's own `--help` exits 1 and, from a console script, names no flag).

These rows run cold, in fresh interpreters: start-up and what it imports is what they test."""

import importlib
import os
import re
import subprocess
import sys

import pytest
import yaml

from bert_tf.cli.flag_parsing import command_flag_values
from helpers import REPO

SCRIPTS = dict(re.findall(r'"(bert-[\w-]+)=bert_tf\.cli\.(\w+):run"',
                          open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()))


@pytest.fixture(scope="module")
def no_tensorflow(tmp_path_factory):
    """An environment in which `import tensorflow` raises."""
    root = tmp_path_factory.mktemp("no_tensorflow")
    (root / "tensorflow").mkdir()
    (root / "tensorflow" / "__init__.py").write_text('raise ImportError("TensorFlow was imported")\n')
    return {**os.environ, "PYTHONPATH": str(root)}


def installed(script, *args, env, cwd=None):
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), script), *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


def own_flags(module):
    """The flags of a command (those generated from its configuration and the frame's), not absl's."""
    return sorted(command_flag_values(importlib.import_module(f"bert_tf.cli.{module}").COMMAND))


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_lists_the_commands_own_flags_and_exits_0_without_tensorflow(script, no_tensorflow):
    done = installed(script, "--help", env=no_tensorflow)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: {script} "), done.stdout[:300]
    flags = own_flags(SCRIPTS[script])
    assert flags
    for name in flags:
        assert re.search(rf"^  --{name}[: ]", done.stdout, re.MULTILINE), (name, done.stdout)
    assert not re.search(r"^  --verbosity", done.stdout, re.MULTILINE)  # absl's flags only with --helpfull
    full = installed(script, "--helpfull", env=no_tensorflow)
    assert full.returncode == 0 and f"--{flags[0]}" in full.stdout
    assert re.search(r"^  --verbosity", full.stdout, re.MULTILINE), full.stdout[-2000:]


def test_pretrain_help_groups_its_flags_and_names_every_shipped_recipe(no_tensorflow):
    done = installed("bert-pretrain", "-h", env=no_tensorflow)
    assert done.returncode == 0
    titles = [line for line in done.stdout.splitlines() if line and not line.startswith(" ") and line.endswith(":")]
    assert titles[:3] == ["the run:", "where it runs:", "recipe overrides (unset: the recipe's value):"], titles
    recipes = sorted(name[:-5] for name in os.listdir(os.path.join(REPO, "configs", "pretrain")))
    config_help = done.stdout.split("--config:")[1].split("\n  --")[0]
    assert all(name in " ".join(config_help.split()) for name in recipes), config_help
    # --platform's help is written from the platforms file: every platform in it, none left out.
    with open(os.path.join(REPO, "configs", "platforms.yaml"), encoding="utf-8") as f:
        platforms = yaml.safe_load(f)["platforms"]
    platform_help = " ".join(done.stdout.split("--platform:")[1].split("\n  --")[0].split())
    assert len(platforms) >= 8 and all(name in platform_help for name in platforms), platform_help
    assert "run.FIELD=VALUE" in " ".join(done.stdout.split("--set:")[1].split())


@pytest.mark.parametrize("script", ["bert-pretrain", "bert-create-pretraining-data", "bert-finetune", "bert-vocab"])
def test_a_mistyped_flag_is_one_line_and_exit_2_without_tensorflow(script, no_tensorflow):
    done = installed(script, "--modle_dir=x", env=no_tensorflow)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == [f"{script}: error: Unknown command line flag 'modle_dir' (--helpshort lists "
                                        f"the flags)."] or "Did you mean" in done.stderr, done.stderr


def test_pretrain_names_a_missing_input_file_without_tensorflow(no_tensorflow, tmp_path):
    missing, vocab = tmp_path / "train.tfrecord", tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")  # demo_cpu draws its masks: it needs the vocab
    done = installed("bert-pretrain", "--config=demo_cpu", f"--model_dir={tmp_path}/run", f"--input_file={missing}",
                     f"--vocab_file={vocab}", env=no_tensorflow)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == [f"bert-pretrain: error: phase 'seq32' (--input_file): input_file pattern "
                                        f"'{missing}' matches no file: check the path (globs are expanded here, so "
                                        f"quote them in the shell)."]
    assert not (tmp_path / "run").exists()  # nothing written


@pytest.mark.slow
def test_tensorflow_start_up_lines_stay_hidden_in_a_fresh_process(tmp_path):
    """Cold, with TensorFlow importable: the command imports it after parsing its flags, and its C++ start-up lines
    (oneDNN, the CUDA stub, cuInit) are still hidden: stderr holds the device line and the one error line only."""
    done = installed("bert-export", f"--model_dir={tmp_path}/none", f"--output_dir={tmp_path}/out", env=os.environ)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0] == "bert-export: running on the CPU (no GPU found)" and len(lines) == 2, done.stderr
    assert lines[1].startswith("bert-export: error: ")

"""The commands as installed: every console script runs its module's `run` through the frame, and the sections
commands share have one definition (the corpus and the instance options): the Beam command takes the flags of
bert-create-pretraining-data and hands the ones it does not know to Beam."""

import glob
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from helpers import REPO, run_cli
from pretraining_records import write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


@pytest.mark.large
def test_beam_command_takes_the_shared_flags_and_passes_runner_options_to_beam(tmp_path):
    """The README's local command: DirectRunner on two worker processes, quiet as the other commands (one line
    naming the devices on stderr: no TensorFlow start-up lines from the workers, no runner logs, no warning that
    the CRCs are computed slowly), records in the files asked for."""
    pytest.importorskip("apache_beam")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("w1 w2 w3 w4 w5 w6.\nw7 w8 w9 w10 w11.\nw12 w13 w14.\n\n" * 30)
    done = run_cli("create_pretraining_data_beam", f"--input_file={corpus}", f"--output_prefix={tmp_path}/train",
                   f"--vocab_file={write_vocab(tmp_path / 'vocab.txt')}", "--max_seq_length=16",
                   "--max_predictions_per_seq=3", "--dupe_factor=1", "--num_output_files=2", "--shard_size_mb=0.0005",
                   "--runner=DirectRunner", "--direct_num_workers=2", "--direct_running_mode=multi_processing")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.splitlines() == ["bert-create-pretraining-data-beam: running on the CPU (no GPU found)"], \
        done.stderr[-3000:]
    outputs = sorted(glob.glob(f"{tmp_path}/train-*"))
    assert [os.path.basename(path) for path in outputs] == ["train-00000-of-00002", "train-00001-of-00002"]
    records = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(outputs)]
    assert len(records) > 10 and f"wrote {len(records)} instances" in done.stdout, done.stdout
    assert len(records[0].features.feature["input_ids"].int64_list.value) == 16
    # A wrong value of a shared flag ends in the frame's one line, as in bert-create-pretraining-data.
    bad = run_cli("create_pretraining_data_beam", f"--input_file={corpus}", f"--output_prefix={tmp_path}/x",
                  f"--vocab_file={tmp_path / 'vocab.txt'}", "--max_seq_length=3")
    assert bad.returncode == 2 and "max_seq_length=3 is too short" in bad.stderr.splitlines()[-1]


def test_console_scripts_are_the_ten_commands():
    setup = open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()
    scripts = dict(re.findall(r'"(bert-[\w-]+)=bert_tf\.cli\.(\w+):run"', setup))
    assert sorted(scripts) == ["bert-convert", "bert-create-pretraining-data", "bert-create-pretraining-data-beam",
                               "bert-evaluate", "bert-export", "bert-fill-mask", "bert-finetune", "bert-inspect-data",
                               "bert-pretrain", "bert-vocab"]
    for script, module in scripts.items():
        assert script == "bert-" + module.replace("_", "-")  # the frame names a command after its module
        assert os.path.exists(os.path.join(os.path.dirname(sys.executable), script)), f"{script}: run make setup"
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "bert-vocab"), "--vocab_size=x"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("bert-vocab: error: flag --vocab_size=x"), done.stderr

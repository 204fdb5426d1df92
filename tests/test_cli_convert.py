"""bert-convert, the console script: converts the real MiniLM directory; wrong flags and inputs fail in one line."""

import os

import numpy as np
import pytest

from bert_tf.model_dir import load_encoder
from helpers import run_cli

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def bert_convert(*args):
    return run_cli("convert", *args, timeout=120)


def our_lines(stderr):
    # Error lines start with the program name; the line before them names the devices.
    return [line for line in stderr.splitlines() if line.startswith("bert-convert: error")]


def test_converts_minilm_and_load_encoder_reads_the_result(minilm_dir, tmp_path):
    output = str(tmp_path / "minilm")
    process = bert_convert("--from", "hf", "--input", minilm_dir, "--output", output)
    assert process.returncode == 0, process.stderr[-2000:]
    assert process.stdout.startswith(f"converted 103 variables from {minilm_dir}")
    assert "hidden_act=gelu," in process.stdout and "newly initialized (not in the source): cls/" in process.stdout
    data = np.load(os.path.join(FIXTURES, "minilm_reference.npz"))
    outputs = load_encoder(output)({"input_word_ids": data["input_ids"], "input_mask": data["attention_mask"],
                                    "input_type_ids": data["token_type_ids"]})
    real = data["attention_mask"].astype(bool)
    assert np.abs(outputs["sequence_output"].numpy() - data["sequence_output"])[real].max() <= 1e-5
    # A second run never writes over the converted checkpoint.
    again = bert_convert("--from=hf", f"--input={minilm_dir}", f"--output={output}")
    assert again.returncode == 2
    assert our_lines(again.stderr) == [f"bert-convert: error: {output} already holds a checkpoint: pass a new "
                                       "--output directory."]


@pytest.mark.parametrize("args, message", [
    (["--from=pt", "--input=a", "--output=b"], "bert-convert: error: flag --from=pt: value should be one of <tf1|hf> "
                                               "(--helpshort lists the flags)."),
    (["--input=a", "--output=b"], "bert-convert: error: Pass exactly one of --from (tf1, hf: into this package's "
                                  "format) and --to (hf, keras_hub: out of it)."),
    (["--from=hf", "--output=b"], "bert-convert: error: --input is required: pass --input=... (--helpshort lists "
                                  "the flags)."),
])
def test_flag_errors_are_one_line(args, message):
    process = bert_convert(*args)
    assert process.returncode == 2
    assert our_lines(process.stderr) == [message]


def test_input_errors_are_one_line(tmp_path, minilm_dir):
    process = bert_convert("--from=tf1", f"--input={minilm_dir}", f"--output={tmp_path / 'out'}")
    assert process.returncode == 2
    assert our_lines(process.stderr) == [f"bert-convert: error: No bert_config.json in {minilm_dir}: a TF1 "
                                         "checkpoint needs its original config."]
    assert "Traceback" not in process.stderr

"""Quiet and true output: no TensorFlow INFO lines at export or checkpoint, each phase's own batch in the training
summary, docs that match `load_encoder_from_saved_model`, and a lean default install with the heavy extras opt-in
(`make setup` keeps them), `tensorboard` among them."""

import ast
import os
import re
import types

from bert_tf import BertPretrainer
from bert_tf.config import BertConfig
from bert_tf.model_dir import write_model_dir
from bert_tf.training.recipe import load_recipe
from bert_tf.training.report import summary_lines
from helpers import REPO, run_cli, tiny_config
from pretraining_records import write_vocab


def setup_lists():
    """setup.py's top-level literal assignments, by name."""
    tree = ast.parse(open(os.path.join(REPO, "setup.py"), encoding="utf-8").read())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.List, ast.Constant))}


def test_export_prints_no_tensorflow_info_lines(tmp_path):
    write_model_dir(str(tmp_path / "model"), BertPretrainer(tiny_config()), write_vocab(tmp_path / "vocab.txt"))
    done = run_cli("export", f"--model_dir={tmp_path / 'model'}", f"--output_dir={tmp_path / 'exported'}",
                   "--max_seq_length=16")
    assert done.returncode == 0, done.stderr[-3000:]
    for words in ("Assets written to", "Writing fingerprint", "Sharding callback duration", "unsupported characters"):
        assert words not in done.stderr, done.stderr
    # What remains: the device line and the command's own progress (absl lines logged from bert_tf's export.py).
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "bert-export: running on the CPU (no GPU found)"
    assert all(re.match(r"I\d{4} [\d:.]+ +\d+ export\.py:\d+\] Wrote ", line) for line in lines[1:]), lines
    assert len(lines) == 4


def test_training_summary_gives_each_phases_batch():
    recipe = load_recipe("small_fast")
    layout = types.SimpleNamespace(num_replicas=1, num_workers=1, num_input_pipelines=1)
    lines = summary_lines(recipe, BertConfig.preset("tiny"), 20000, [], None, 60.0, layout, "runs/small")
    text = "\n".join(lines)
    assert "phases: seq32 18000 steps at 32/5, global batch 128, seq128 2000 steps at 128/20, global batch 32" in text
    assert "global batch 32," not in text.split("phases:")[0]  # no single batch for a run of two


def test_export_readme_describes_the_three_values_load_encoder_from_saved_model_returns():
    text = " ".join(open(os.path.join(REPO, "export", "README.md"), encoding="utf-8").read().split())
    assert ("encoder, vocab_file, do_lower_case = bert_tf.serving.load_encoder_from_saved_model(" in text
            and "returns three values" in text)


def test_default_install_is_lean_and_make_setup_keeps_the_developer_set():
    lists = setup_lists()
    source = open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()
    default = {r.split("=")[0].split(">")[0].split("<")[0].split("!")[0] for r in
               [lists["TENSORFLOW"]] + lists["TENSORFLOW_DEPENDENT"] + lists["REQUIRES_WITHOUT_TENSORFLOW"]}
    assert default == {"tensorflow", "tensorflow-text", "keras", "absl-py", "numpy", "pyyaml", "safetensors",
                       "matplotlib", "tqdm"}
    for extra, package in (("tensorboard", "tensorboard"), ("tfds", "tensorflow-datasets"),
                           ("keras_hub", "keras-hub"), ("beam", "apache-beam"), ("transformers", "torch")):
        assert re.search(rf'"{extra}": \[[^\]]*"{package}[^"]*"', source), extra
    makefile = open(os.path.join(REPO, "Makefile"), encoding="utf-8").read()
    extras = re.search(r"^EXTRAS \?= (\S+)$", makefile, re.M).group(1).split(",")
    assert {"test", "corpus", "serving", "hub", "beam", "transformers", "tensorboard", "tfds", "keras_hub"} <= set(
        extras)
    readme = " ".join(open(os.path.join(REPO, "README.md"), encoding="utf-8").read().split())
    assert 'pip install ".[tensorboard]"' in readme and "`pip install .` is the lean install" in readme

"""The README's quick start runs as written: its variables block names exactly the variables its commands block
reads, and (large) the commands block, read from the README, runs verbatim in bash on a corpus and a labelled task
made here from the embedded Bible, with only the four variables set by the test: every command exits 0 and writes
what the README says."""

import json
import os
import re
import subprocess
import sys

import pytest

from bert_tf.text.bible import read_bible_documents, read_bible_verses
from bert_tf.text.corpus import CorpusCounts
from helpers import REPO

SECTION = "## Quick start: BERT on your own text"
FENCED_SH = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)
ASSIGNMENT = re.compile(r"^([A-Z_]+)=\S+", re.M)
READ = re.compile(r"\$\{?([A-Z_]+)\}?")
# The test's corpus and task: small enough for a few minutes, large enough for every command's checks.
CHAPTERS = 300  # of the Bible's 1,189 (Genesis 1 to 1 Kings 2), ~1 MB
VERSES_PER_CLASS = {"train": 200, "dev": 60}
STEPS = 500  # the README's smallest budget (small_fast's warmup)


def quick_start_blocks():
    """(variables block, commands block): the two fenced `sh` blocks of the README's quick start, in order."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = FENCED_SH.findall(section)
    assert len(blocks) == 2, f"the quick start should have a variables block and a commands block: {blocks}"
    return blocks


def test_the_commands_read_exactly_the_variables_the_readme_sets():
    variables, commands = quick_start_blocks()
    assert variables.strip() and all(ASSIGNMENT.match(line) for line in variables.strip().splitlines()), variables
    assert set(ASSIGNMENT.findall(variables)) == {"CORPUS", "TASK", "STEPS", "OUT"}
    assert set(READ.findall(commands)) == set(ASSIGNMENT.findall(variables)), commands
    console_scripts = set(re.findall(r"\"(bert-[\w-]+)=", open(os.path.join(REPO, "setup.py")).read()))
    used = set(re.findall(r"^(bert-[\w-]+) ", commands, re.M))
    assert used == {"bert-vocab", "bert-create-pretraining-data", "bert-pretrain", "bert-evaluate", "bert-export",
                    "bert-finetune", "bert-fill-mask"}
    assert used <= console_scripts, used - console_scripts


def write_corpus(path):
    """The first CHAPTERS chapters of the Bible in the original format: a sentence a line, a blank line after each."""
    with open(path, "w", encoding="utf-8") as f:
        for index, sentences in enumerate(read_bible_documents(CorpusCounts())):
            if index == CHAPTERS:
                break
            f.write("\n".join(sentences) + "\n\n")


def write_task(directory):
    """train.tsv and dev.tsv (columns text, label): verses of Genesis ("old") and of Matthew ("new"), disjoint."""
    verses = {"old": [], "new": []}
    for book, _, _, text in read_bible_verses(CorpusCounts()):
        label = {1: "old", 40: "new"}.get(book)
        if label and "\t" not in text:
            verses[label].append(text.strip())
    os.makedirs(directory)
    start = 0
    for split, count in VERSES_PER_CLASS.items():
        rows = [f"{text}\t{label}" for label, texts in verses.items() for text in texts[start:start + count]]
        with open(os.path.join(directory, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("text\tlabel\n" + "\n".join(rows) + "\n")
        start += count


@pytest.mark.large
def test_the_quick_start_runs_as_written(tmp_path):
    _, commands = quick_start_blocks()
    corpus, task, out = tmp_path / "corpus.txt", tmp_path / "task", tmp_path / "out"
    write_corpus(corpus)
    write_task(task)
    bin_dir = os.path.dirname(sys.executable)  # the venv's console scripts, as an activated .venv has them
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "CORPUS": str(corpus), "TASK": str(task), "STEPS": str(STEPS), "OUT": str(out)}
    process = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", commands], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=1800)
    assert process.returncode == 0, (process.stdout[-3000:], process.stderr[-5000:])

    expected = ["data/train.txt", "data/heldout.txt", "vocab.txt", "data/train-seq32.tfrecord",
                "data/train-seq128.tfrecord", "data/heldout-seq128.tfrecord", f"model/ckpt-{STEPS}.index",
                "model/evaluations/heldout-seq128.json", "exported/encoder/1/saved_model.pb",
                "exported/encoder_mlm/1/saved_model.pb", "exported/preprocessing/1/saved_model.pb",
                "finetuned/best.keras", "finetuned/dev_results.json", "finetuned/classifier/1/saved_model.pb"]
    missing = [path for path in expected if not (out / path).exists()]
    assert not missing, (missing, sorted(str(p.relative_to(out)) for p in out.rglob("*"))[:80])
    held_out_documents = (out / "data" / "heldout.txt").read_text().count("\n\n")
    assert held_out_documents == CHAPTERS // 10
    results = json.loads((out / "model" / "evaluations" / "heldout-seq128.json").read_text())
    assert results["global_step"] == STEPS and 0 < results["masked_lm_accuracy"] <= 1, results
    assert re.search(r"^held-out masked-LM accuracy 0\.\d{4} .* at step 500 ", process.stdout, re.M), process.stdout
    assert re.search(r"^unigram baseline 0\.\d{4}", process.stdout, re.M), process.stdout
    assert re.search(r"^epoch 3: dev accuracy: 0\.\d{4}", process.stdout, re.M), process.stdout
    assert re.search(r"\[MASK\] 1: \S+ 0\.\d{4}", process.stdout), process.stdout

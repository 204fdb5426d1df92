"""Figures live in their rows and the documents show them: every result row names its command and its source, every
table of rows in docs/ and the README is the one `tools/render_measurements.py` renders from them today (a changed
row or a hand-edited table fails), and no document describes the machines the package was developed on."""

import glob
import json
import os
import subprocess
import sys

from helpers import REPO
from tools.render_measurements import row_problem

RENDERER = os.path.join(REPO, "tools", "render_measurements.py")
# Where rows live: bench/results/, experiments/results/ and a tool's own results/ (tools/xla/results/).
RESULT_FOLDERS = ("bench", "experiments", "tools")

# Phrases that describe how and where this package was developed, not a user's machine (a result's own device, e.g.
# "one NVIDIA H200", is named where its figures are).
DEVELOPMENT_PHRASES = ("24 GiB machine", "the GPU machine", "shared with other jobs", "load 9-20",
                       "while the option was built", "one copy may carry", "64 MiB")
SEARCHED = ("docs", "README.md", "bench", "tools", "Makefile", "bert_tf")


def render(*args, cwd=REPO):
    return subprocess.run([sys.executable, RENDERER, *args], cwd=cwd, capture_output=True, text=True)


def test_every_result_row_names_its_command_and_source():
    problems, rows = [], 0
    for folder in RESULT_FOLDERS:
        for path in sorted(glob.glob(os.path.join(REPO, folder, "**", "results", "**", "*.jsonl"), recursive=True)):
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                if line.strip():
                    rows += 1
                    problem = row_problem(json.loads(line))
                    if problem:
                        problems.append(f"{os.path.relpath(path, REPO)}:{number}: {problem}")
    assert not problems, "rows that cannot back a figure:\n" + "\n".join(problems[:20])
    assert rows > 1000  # the rows are really read
    assert row_problem({"command": "python -m bench.bench_x", "source": "measured"}) is None
    assert "'source'" in row_problem({"command": "python -m bench.bench_x"})


def test_rendered_documents_are_current():
    result = render("--check")
    assert result.returncode == 0, result.stderr


def test_a_changed_row_or_a_hand_edited_table_is_stale(tmp_path):
    rows = tmp_path / "bench" / "results" / "bench_x"
    rows.mkdir(parents=True)
    (rows / "r.jsonl").write_text('{"command": "python -m bench.bench_x", "source": "measured", "seq": 128, '
                                  '"sequences_per_s": 41.25}\n', encoding="utf-8")
    spec = ("<!-- rows\nfile: bench/results/bench_x/*.jsonl\ncolumns:\n  - [seq, \"{seq}\"]\n"
            "  - [sequences/s, \"{sequences_per_s:.1f}\"]\n  - [per 2 s, \"{sequences_per_s * 2:.1f}\"]\n"
            "-->\n<!-- end rows -->\n")
    doc = tmp_path / "doc.md"
    doc.write_text("# Figures\n\n" + spec + "\nProse.\n", encoding="utf-8")
    renderer = tmp_path / "tools" / "render_measurements.py"
    renderer.parent.mkdir()
    renderer.write_text(open(RENDERER, encoding="utf-8").read(), encoding="utf-8")

    def run(*args):
        return subprocess.run([sys.executable, str(renderer), *args, str(doc)], capture_output=True, text=True)

    assert run("--check").returncode == 1
    assert run().returncode == 0
    text = doc.read_text(encoding="utf-8")
    assert "    python -m bench.bench_x\n" in text and "| 128 | 41.2 | 82.5 |" in text and text.endswith("\nProse.\n")
    assert run("--check").returncode == 0
    doc.write_text(text.replace("| 128 | 41.2 |", "| 128 | 45.0 |"), encoding="utf-8")
    assert run("--check").returncode == 1
    doc.write_text(text, encoding="utf-8")
    (rows / "r.jsonl").write_text('{"command": "python -m bench.bench_x", "seq": 128}\n', encoding="utf-8")
    result = run("--check")
    assert result.returncode == 2 and "'source'" in result.stderr, result.stderr


def development_phrases(root=REPO):
    """'path: phrase' for each phrase of DEVELOPMENT_PHRASES in the searched files (case-insensitive)."""
    found = []
    for entry in SEARCHED:
        top = os.path.join(root, entry)
        paths = [top] if os.path.isfile(top) else sorted(
            os.path.join(folder, name) for folder, _, names in os.walk(top) for name in names
            if name.endswith((".py", ".md", ".yaml", ".txt", ".json", ".cfg")))
        for path in paths:
            text = " ".join(open(path, encoding="utf-8", errors="replace").read().lower().split())
            found += [f"{os.path.relpath(path, root)}: {phrase}" for phrase in DEVELOPMENT_PHRASES
                      if phrase.lower() in text]
    return found


def test_no_document_describes_the_machines_the_package_was_developed_on(tmp_path):
    found = development_phrases()
    assert not found, "say what a user's machine needs instead:\n" + "\n".join(found)
    (tmp_path / "README.md").write_text("Copy it to\nthe GPU machine.\n", encoding="utf-8")
    assert development_phrases(tmp_path) == ["README.md: the GPU machine"]

"""The repository explains itself: every document the code, configs, tests and benchmarks cite is in docs/, and
none outside the repository is cited."""

import os
import re
import subprocess

from helpers import REPO

OUTSIDE = re.compile(r"shared/|\b(RECIPE|ENVIRONMENT|CONTRACT|STYLE)\.md\b")
CITED = re.compile(r"\bdocs/[\w.-]+\.md\b")


def tracked_text_files():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for path in files:
        if path.endswith((".py", ".md", ".yaml", ".json", ".cfg", ".toml", "Makefile", "BUILD", ".txt")):
            full = os.path.join(REPO, path)
            if os.path.exists(full):
                yield path, open(full, encoding="utf-8", errors="replace").read()


def test_cited_documents_exist_and_none_is_outside_the_repository():
    outside, missing, cited = [], [], set()
    for path, text in tracked_text_files():
        if path == "tests/test_docs.py":
            continue
        outside += [f"{path}: {match.group(0)}" for match in OUTSIDE.finditer(text)]
        for match in CITED.finditer(text):
            cited.add(match.group(0))
            if not os.path.exists(os.path.join(REPO, match.group(0))):
                missing.append(f"{path}: {match.group(0)}")
    assert not outside, outside
    assert not missing, missing
    assert {"docs/architecture.md", "docs/original_recipe.md", "docs/record_format.md"} <= cited

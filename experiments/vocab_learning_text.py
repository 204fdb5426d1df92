"""About 100 MB of real text in many languages and scripts, from Debian packages, for the vocab-learning benchmark
(bench/bench_vocab_learning.py), written in the quick start's input format (a paragraph a line, a blank line after
each document; documents shuffled with a fixed seed).

    mkdir /tmp/vocab_text && cd /tmp/vocab_text && apt-get download linux-doc-6.1 python3.11-doc manpages \\
        manpages-dev manpages-{de,fr,es,it,nl,pl,pt,pt-br,ro,ru,uk,cs,hu,fi,vi,ja,zh} \\
        && for deb in *.deb; do dpkg-deb -x "$deb" root; done
    .venv/bin/python -m experiments.vocab_learning_text --root /tmp/vocab_text/root --out /tmp/vocab_text/text.txt

What it holds (Debian 12; licences as the packages state them): the reStructuredText sources of the Linux
kernel's documentation (`linux-doc-6.1`, GPL-2; English, with Chinese, Japanese, Korean, Italian and Spanish
translations) and of Python's documentation (`python3.11-doc`, PSF licence), and the manual pages of `manpages`,
`manpages-dev` and the translated `manpages-*` packages (various free licences, mostly GPL and the Linux man-pages
licence; German, French, Spanish, Italian, Dutch, Polish, Portuguese, Romanian, Russian, Ukrainian, Czech,
Hungarian, Finnish, Vietnamese, Japanese, Chinese) with the troff markup stripped: 106 MB, 12,634 documents.
"""

import argparse
import glob
import gzip
import os
import random
import re

_TEXT_MACROS = re.compile(r"^\.(SH|SS|B|I|BR|BI|IR|RB|RI|IB|SM|SB)\s+(.*)$")
_PARAGRAPH_MACROS = ("PP", "LP", "P", "TP", "IP", "sp", "br")
_FONT = re.compile(r"\\f(\(..|\[[^\]]*\]|.)")
_SPECIAL = {r"\-": "-", r"\(em": "—", r"\(en": "–", r"\(aq": "'", r"\(dq": '"', r"\(lq": "“", r"\(rq": "”",
            r"\e": "\\", r"\&": "", r"\(bu": "•", r"\(co": "©", r"\ ": " ", r"\~": " ", r"\|": "", r"\^": "",
            r"\:": "", r"\%": "", r"\c": ""}
_SPECIAL_RE = re.compile("|".join(re.escape(k) for k in sorted(_SPECIAL, key=len, reverse=True)))
_OTHER_ESCAPE = re.compile(r"\\(\(..|\*\(..|\*\[[^\]]*\]|\*.|\[[^\]]*\]|s[-+]?\d|.)")


def manual_page_paragraphs(source):
    """A troff manual page's text as paragraphs: section titles and the text of font macros kept, other requests
    and escapes dropped."""
    paragraphs, current = [], []
    for line in source.split("\n"):
        if line.startswith((".", "'")):
            match = _TEXT_MACROS.match(line)
            if not match:
                if line[1:3].strip() in _PARAGRAPH_MACROS and current:
                    paragraphs.append(" ".join(current))
                    current = []
                continue
            if match.group(1) in ("SH", "SS"):
                if current:
                    paragraphs.append(" ".join(current))
                current = []
                paragraphs.append(match.group(2).replace('"', ""))
                continue
            line = match.group(2).replace('"', "")
        line = _OTHER_ESCAPE.sub("", _SPECIAL_RE.sub(lambda m: _SPECIAL[m.group(0)], _FONT.sub("", line))).strip()
        if line:
            current.append(line)
    if current:
        paragraphs.append(" ".join(current))
    return [p for p in paragraphs if p.strip()]


def documents(root):
    """The documents (lists of paragraphs) under an unpacked package tree `root`."""
    pages = sorted(glob.glob(os.path.join(root, "usr/share/man/*/man*/*.gz")) +
                   glob.glob(os.path.join(root, "usr/share/man/man*/*.gz")))
    for path in pages:
        with gzip.open(path, "rb") as f:
            source = f.read().decode("utf-8", "replace")
        if not source.startswith(".so "):  # a link to another page
            yield manual_page_paragraphs(source)
    sources = sorted(glob.glob(os.path.join(root, "usr/share/doc/linux-doc-6.1/html/_sources/**/*.txt"),
                               recursive=True) +
                     glob.glob(os.path.join(root, "usr/share/doc/python3.11/html/_sources/**/*.txt"), recursive=True))
    for path in sources:
        with open(path, encoding="utf-8", errors="replace") as f:
            yield [p for p in (" ".join(block.split("\n")).strip() for block in f.read().split("\n\n")) if p]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="the folder the packages were unpacked into")
    parser.add_argument("--out", required=True, help="the text file to write")
    args = parser.parse_args()
    found = [d for d in documents(args.root) if d]
    random.Random(0).shuffle(found)
    with open(args.out, "w", encoding="utf-8") as f:
        for document in found:
            f.write("\n".join(document) + "\n\n")
    print(f"wrote {len(found)} documents, {os.path.getsize(args.out)} bytes to {args.out}")


if __name__ == "__main__":
    main()

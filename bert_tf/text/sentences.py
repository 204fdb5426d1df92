"""Raw text -> sentences, by a documented rule.

The rule: a blank line always ends a sentence (paragraphs, headings). Inside a paragraph a sentence ends after
".", "!", "?" or "…" (with any closing quotes or brackets after them) when whitespace follows and the next word
starts with an upper-case letter or a digit (opening quotes and brackets skipped), unless the word before the
period is a known abbreviation ("Mr.", "Dr.", "e.g.", ...) or a single letter (an initial, "J. R. R. Tolkien").
Whitespace inside a sentence collapses to single spaces.

Why not tensorflow-text's `StateBasedSentenceBreaker` (it runs on CPU here): it splits "It costs $3.50." after
"$3.", "Mr. Smith" after "Mr." and moves a closing quote to the next sentence ('He said: "Hello!' | '" Then ...'),
which would put broken sentences into NSP pairs.
"""

import re

_PARAGRAPH = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_BOUNDARY = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*\s+")
_OPENERS = "\"'\u201c\u2018([{"
# Words that also end sentences in ordinary prose ("no", "fig", "sun", "art") are left out on purpose.
ABBREVIATIONS = frozenset("""
    mr mrs ms dr prof rev fr st jr sr sen gov gen col lt sgt capt cmdr adm maj hon pres messrs mme mlle
    vs etc e.g i.e cf al approx dept vol vols eds pp inc ltd corp bros mt ft
    jan feb apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m
    """.split())


def _ends_with_abbreviation(text):
    word = text.rsplit(None, 1)[-1] if text.strip() else ""
    word = word.lstrip(_OPENERS).rstrip(".").lower()
    return len(word) == 1 and word.isalpha() or word in ABBREVIATIONS


def _starts_sentence(text):
    stripped = text.lstrip(_OPENERS)
    return bool(stripped) and (stripped[0].isupper() or stripped[0].isdigit())


def split_sentences(text):
    """The sentences of a raw text (a list of str, none empty).

    Example:
    >>> split_sentences('Mr. Smith paid $3.50. He said: "Hello!" Then he left.\\n\\nChapter 2')
    ['Mr. Smith paid $3.50.', 'He said: "Hello!"', 'Then he left.', 'Chapter 2']
    """
    sentences = []
    for paragraph in _PARAGRAPH.split(text):
        start = 0
        for match in _BOUNDARY.finditer(paragraph):
            candidate = paragraph[start:match.end()]
            if not _starts_sentence(paragraph[match.end():]):
                continue
            if match.group().startswith(".") and _ends_with_abbreviation(paragraph[start:match.start() + 1]):
                continue
            sentences.append(" ".join(candidate.split()))
            start = match.end()
        rest = " ".join(paragraph[start:].split())
        if rest:
            sentences.append(rest)
    return [s for s in sentences if s]

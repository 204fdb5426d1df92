"""Raw text -> sentences, by a documented rule, in any script.

The rule: a blank line always ends a sentence (paragraphs, headings). Inside a paragraph:
- Every other script's sentence end ends a sentence wherever it stands, with any closing quotes or brackets after
  it: the characters of Unicode's Sentence_Terminal property (through the `regex` library) but ".", "!" and "?",
  i.e. 。！？｡ (Chinese, Japanese), । ॥ (Devanagari and other Indic scripts), ؟ ۔ (Arabic, Urdu), ። (Ethiopic),
  ။ (Myanmar) and the rest. These scripts have no upper case and Chinese and Japanese put no space after them, so
  nothing about the next word is asked; they are not used in abbreviations (the fullwidth "．" can be a decimal
  point between fullwidth digits, "３．５": such a number is cut, a known limit).
- ".", "!", "?" or "…" (with any closing quotes or brackets after them) end a sentence when whitespace follows and
  the next word starts with an upper-case letter, a digit or a letter of a script without case (opening quotes and
  brackets skipped), unless the word before the period is a known abbreviation ("Mr.", "Dr.", "e.g.", ...) or a
  single letter (an initial, "J. R. R. Tolkien").
Whitespace inside a sentence collapses to single spaces.

Why not pysbd or sentencex (rule-based segmenters of many languages): both take the text's language, which a raw
text file does not state, and apply that language's abbreviation lists, which would change the English rule's
results; Unicode's property, read through `regex`, is the one list of sentence ends that every script shares.

Why not tensorflow-text's `StateBasedSentenceBreaker` (it runs on CPU here): it splits "It costs $3.50." after
"$3.", "Mr. Smith" after "Mr." and moves a closing quote to the next sentence ('He said: "Hello!' | '" Then ...'),
which would put broken sentences into NSP pairs.
"""

import re

import regex

_PARAGRAPH = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# Another script's sentence end (Unicode's Sentence_Terminal less the Latin three), its closing quotes and brackets.
_SCRIPT_BOUNDARY = regex.compile(r"[\p{Sentence_Terminal}--[.!?]]+[\"'\p{Pe}\p{Pf}]*\s*", regex.V1)
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
    if not stripped:
        return False
    first = stripped[0]
    caseless_letter = first.isalpha() and not first.islower() and first.lower() == first.upper()
    return first.isupper() or first.isdigit() or caseless_letter


def split_sentences(text):
    """The sentences of a raw text (a list of str, none empty).

    Example:
    >>> split_sentences('Mr. Smith paid $3.50. He said: "Hello!" Then he left.\\n\\nChapter 2')
    ['Mr. Smith paid $3.50.', 'He said: "Hello!"', 'Then he left.', 'Chapter 2']
    >>> split_sentences("他说：“你好！”然后走了。यह पुस्तक है। क्या?")
    ['他说：“你好！”', '然后走了。', 'यह पुस्तक है।', 'क्या?']
    """
    sentences = []
    for paragraph in _PARAGRAPH.split(text):
        start = 0
        for match in _SCRIPT_BOUNDARY.finditer(paragraph):
            sentences.extend(_latin_sentences(paragraph[start:match.end()]))
            start = match.end()
        sentences.extend(_latin_sentences(paragraph[start:]))
    return [s for s in sentences if s]


def _latin_sentences(paragraph):
    """The sentences of a paragraph (or a part of one that another script's sentence end closed) by the rule of
    ".", "!", "?" and "…"."""
    sentences = []
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
    return sentences

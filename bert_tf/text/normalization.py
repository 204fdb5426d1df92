"""The original BasicTokenizer's text normalization (tokenization.py), at C speed.

The original, character by character: drop U+0000, U+FFFD and every control or format character (Unicode
categories Cc and Cf, except tab, newline and carriage return; private-use and unassigned characters stay, and the
word holding one becomes [UNK] unless the vocab has it); turn whitespace (those three, category Zs, and the other
characters Python's `str.split` splits on) into a space; put spaces around CJK ideographs; and for uncased models
lower-case with `str.lower`, decompose (NFD) and drop non-spacing marks (category Mn).

Lower-casing and accent stripping are two settings here, as in Hugging Face's `BertTokenizer` and keras-hub
(`strip_accents`): `do_lower_case` alone keeps the original's meaning (both, for Google's released uncased vocabs);
`strip_accents=False` lower-cases and keeps every mark (umlauts, Vietnamese tones, Japanese voicing marks, the
Devanagari virama), and `strip_accents=True` without lower-casing strips and keeps the case.

tensorflow-text's `FastBertTokenizer(lower_case_nfd_strip_accents=True)` is written its own way and gives other ids
on real text: it folds compatibility characters ("ß" -> "ss", "ﬁ" -> "fi", fullwidth letters -> ASCII) and turns
control characters into spaces instead of deleting them ("a\\x00b" is two words for it, one for the original). So
the text is normalized here exactly as the original does it, and FastBertTokenizer only splits and runs WordPiece.
The per-character work is a `str.translate` over each string's distinct characters, cached per character.
"""

import re
import unicodedata

# The original's WordpieceTokenizer maps a word longer than this (in characters) to [UNK]
# (max_input_chars_per_word=200; transformers' port uses 100).
MAX_CHARS_PER_WORD = 200

# The same clean-up as RE2 character classes, for in-graph normalization (tf.strings.regex_replace): what is
# deleted (Cc but tab, newline and return; Cf; U+FFFD; U+0000 is Cc), what becomes a space, what lower-casing strips.
DELETED_CHARACTERS_RE2 = r"[\x{0}-\x{8}\x{b}\x{c}\x{e}-\x{1f}\x{7f}-\x{9f}\p{Cf}\x{fffd}]"
SPACE_CHARACTERS_RE2 = r"[\p{Zs}\x{2028}\x{2029}]"
MARK_CHARACTERS_RE2 = r"\p{Mn}"

_ASCII_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_WHITESPACE = str.maketrans("\t\n\r", "   ")
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
               (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))

# Per character: what the original's clean-up and CJK spacing turn it into ("" deletes it).
_CLEAN_CACHE = {}
_MARK_CACHE = {}
_LOSES_MARK_CACHE = {}


def _clean_char(char):
    cp = ord(char)
    if char in "\t\n\r":
        return " "
    if cp == 0 or cp == 0xFFFD or unicodedata.category(char) in ("Cc", "Cf"):
        return ""
    # Zs is the original's whitespace; str.split (its whitespace_tokenize) also splits on U+2028/U+2029.
    if unicodedata.category(char) == "Zs" or char.isspace():
        return " "
    if is_cjk_character(char):
        return f" {char} "
    return char


def is_cjk_character(char):
    """Whether `char` is a CJK ideograph (`_CJK_RANGES`), which the original puts in a word of its own."""
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_mark(char):
    return unicodedata.category(char) == "Mn"


def is_punctuation(char):
    """The original's `_is_punctuation`: ASCII non-letters/digits and Unicode category P*."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _translation(text, cache, rule):
    table = {}
    for char in set(text):
        out = cache.get(char)
        if out is None:
            out = cache[char] = rule(char)
        if out != char:
            table[ord(char)] = out
    return table


def strips_accents(do_lower_case, strip_accents):
    """Whether marks are stripped: `strip_accents` where given, else `do_lower_case` (the original, and Hugging
    Face's `strip_accents=None`).

    Example:
    >>> strips_accents(True, None), strips_accents(True, False), strips_accents(False, True)
    (True, False, True)
    """
    return bool(do_lower_case) if strip_accents is None else bool(strip_accents)


def normalize(text, do_lower_case=True, strip_accents=None):
    """`text` as the original BasicTokenizer sees it just before splitting on whitespace and punctuation.

    Args:
        text: a str.
        do_lower_case: lower-case with `str.lower`.
        strip_accents: decompose (NFD) and drop the non-spacing marks; None: as `do_lower_case` (the original).

    Example:
    >>> normalize("Café\\u00a0Straße\\x00s 中文")
    'cafe straßes  中  文 '
    >>> normalize("Für パンダが", strip_accents=False)
    'für パンダが'
    """
    strip = strips_accents(do_lower_case, strip_accents)
    if text.isascii():
        text = _ASCII_CONTROL.sub("", text).translate(_ASCII_WHITESPACE)
        return text.lower() if do_lower_case else text
    table = _translation(text, _CLEAN_CACHE, _clean_char)
    if table:
        text = text.translate(table)
    if do_lower_case:
        text = text.lower()
    if strip:
        text = strip_marks(text)
    return text


def loses_mark(char):
    """Whether stripping accents changes `char` (its decomposition holds a non-spacing mark); Hangul syllables,
    which decompose into jamo letters, do not count.

    Example:
    >>> loses_mark("ü"), loses_mark("\u094d"), loses_mark("한"), loses_mark("ß")
    (True, True, False, False)
    """
    lost = _LOSES_MARK_CACHE.get(char)
    if lost is None:
        lost = _LOSES_MARK_CACHE[char] = any(_is_mark(c) for c in unicodedata.normalize("NFD", char))
    return lost


def strip_marks(text):
    """`text` decomposed (NFD) without its non-spacing marks (category Mn): the original BasicTokenizer's accent
    stripping.

    Example:
    >>> strip_marks("Tiếng Việt"), unicodedata.normalize("NFC", strip_marks("한국어")) == "한국어"
    ('Tieng Viet', True)
    """
    text = unicodedata.normalize("NFD", text)
    if not text.isascii():
        marks = _translation(text, _MARK_CACHE, lambda c: "" if _is_mark(c) else c)
        if marks:
            text = text.translate(marks)
    return text


def split_words(text):
    """The original's words of normalized text: split on whitespace, then each punctuation mark on its own."""
    words = []
    for chunk in text.split():
        start = 0
        for i, char in enumerate(chunk):
            if is_punctuation(char):
                if i > start:
                    words.append(chunk[start:i])
                words.append(char)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


def unassigned_characters(text):
    """The characters of `text` that this Python's Unicode tables leave unassigned (category Cn).

    The original keeps them inside their word, which then has no WordPiece and becomes [UNK]; tensorflow-text's
    newer tables may call one of them punctuation (e.g. U+1B4E, U+1B7F) and split the word there.
    """
    if text.isascii():
        return set()
    new = set(text) - _ASSIGNED_SEEN  # set operations in C: most texts end here
    if not new:
        return new
    unassigned = {char for char in new if unicodedata.category(char) == "Cn"}
    _ASSIGNED_SEEN.update(new - unassigned)
    return unassigned


# Characters met so far that this Python's tables assign (the check above skips them).
_ASSIGNED_SEEN = set()


def has_overlong_word(text):
    """Whether normalized text holds a word the original maps to [UNK] for its length (a cheap check first)."""
    if len(text) <= MAX_CHARS_PER_WORD:
        return False
    if max(map(len, text.split()), default=0) <= MAX_CHARS_PER_WORD:
        return False
    return any(len(word) > MAX_CHARS_PER_WORD for word in split_words(text))

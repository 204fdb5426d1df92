"""bert-vocab's default for accent stripping: strip only where it changes almost no word of the text.

The original uncased normalization drops every combining mark after decomposition. On English text that folds
the odd "café" into "cafe" and loses nothing; on German it makes "für" "fur", on Vietnamese it drops every tone,
on Japanese every voicing mark (パンダが -> ハンタか), on Hindi the virama, on Russian the breve of й: other words,
or none. So when a vocab is learned lower-cased without `--strip_accents` or `--nostrip_accents`, the text is
decided from the words the learner counts anyway (after the clean-up and lower-casing, as the tokenizer splits
them): the share of their occurrences that stripping would change, compared after NFC (decomposition alone splits
Hangul syllables into jamo, which are letters, not marks, and so changes no word). Marks are stripped when that
share is at most `MAX_CHANGED_WORD_SHARE`, and kept otherwise; stripped, the counts become those of the stripped
words, so the text is read once. No script is named: the text decides.

Example:
>>> choose_strip_accents({"the": 500, "cat": 250, "café": 1, ".": 250}).strip_accents
True
>>> choice = choose_strip_accents({"für": 1, "die": 1, "kinder": 1, ".": 1})
>>> choice.strip_accents, choice.changed, choice.words
(False, 1, 4)
>>> stripped_word_counts({"für": 2, "fur": 1, "kinder": 1})
Counter({'fur': 3, 'kinder': 1})
"""

import collections
import dataclasses

from bert_tf.text.normalization import loses_mark, strip_marks

# Stripping marks is chosen only where it changes at most this share of the text's word occurrences.
MAX_CHANGED_WORD_SHARE = 0.001


@dataclasses.dataclass(frozen=True)
class AccentChoice:
    """Whether to strip accents, with the counts it was decided on.

    Example:
    >>> AccentChoice(strip_accents=False, words=1000, changed=52).reason()[:44]
    'keeping accents: stripping would change 5.2%'
    """

    strip_accents: bool
    words: int
    changed: int

    @property
    def share(self):
        return self.changed / self.words if self.words else 0.0

    def reason(self):
        """One line saying what was chosen and why, and the flag that chooses otherwise."""
        measured = (f"stripping would change {100 * self.share:.3g}% of the text's {self.words:,} words "
                    f"({self.changed:,})")
        limit = f"{100 * MAX_CHANGED_WORD_SHARE:g}%"
        if self.strip_accents:
            return (f"stripping accents, as the original uncased vocabs do: {measured}, at most {limit} "
                    f"(--nostrip_accents keeps them)")
        return f"keeping accents: {measured}, over {limit} (--strip_accents strips them anyway)"


def choose_strip_accents(words):
    """Counts the word occurrences that stripping would change and chooses (see the module's docstring).

    Args:
        words: {word: count} of the text normalized with lower-casing and no stripping (`WordCounts.words`).
    """
    changed = sum(count for word, count in words.items() if not word.isascii() and any(map(loses_mark, word)))
    total = sum(words.values())
    return AccentChoice(changed <= MAX_CHANGED_WORD_SHARE * total, total, changed)


def stripped_word_counts(words):
    """{word: count} of the same text normalized with accents stripped: each word stripped of its marks, counts of
    words that become the same added up (a word of marks alone is gone; the tokenizer's split of a stripped word
    is that of the word, as stripping adds no whitespace, and a mark that decomposes into punctuation is split off).
    """
    from bert_tf.text.word_counting import word_pattern

    pattern, stripped = word_pattern(), collections.Counter()
    for word, count in words.items():
        if word.isascii():
            stripped[word] += count
            continue
        for piece in pattern.findall(strip_marks(word)):
            stripped[piece] += count
    return stripped

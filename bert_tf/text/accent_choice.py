"""bert-vocab's default for accent stripping: strip only where it changes almost no word of the text.

The original uncased normalization drops every combining mark after decomposition. On English text that folds
the odd "café" into "cafe" and loses nothing; on German it makes "für" "fur", on Vietnamese it drops every tone,
on Japanese every voicing mark (パンダが -> ハンタか), on Hindi the virama, on Russian the breve of й: other words,
or none. So when a vocab is learned lower-cased without `--strip_accents` or `--nostrip_accents`, the text is
counted first: the share of its word occurrences (after the clean-up and lower-casing, split on whitespace, each
CJK ideograph apart) that stripping would change, compared after NFC (decomposition alone splits Hangul syllables
into jamo, which are letters, not marks, and so changes no word). Marks are stripped when that share is at most
`MAX_CHANGED_WORD_SHARE`, and kept otherwise. No script is named: the text decides.

Example:
>>> choose_strip_accents(["The café is open."] + ["The cat sat on the mat."] * 250).strip_accents
True
>>> choose_strip_accents(["Für die Kinder.", "Sie können es."]).strip_accents
False
"""

import dataclasses

from bert_tf.text.normalization import loses_mark, normalize

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


def choose_strip_accents(sentences, do_lower_case=True):
    """Counts the word occurrences of `sentences` that stripping would change and chooses (see the module's
    docstring); the words are those of the text normalized with `do_lower_case` and no stripping."""
    words = changed = 0
    for sentence in sentences:
        text = normalize(sentence, do_lower_case, strip_accents=False)
        chunks = text.split()
        words += len(chunks)
        if text.isascii():
            continue
        marked = {char for char in set(text) if loses_mark(char)}
        if marked:
            changed += sum(1 for chunk in chunks if not marked.isdisjoint(chunk))
    return AccentChoice(changed <= MAX_CHANGED_WORD_SHARE * words, words, changed)

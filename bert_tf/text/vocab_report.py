"""How a vocab tokenizes text it was not learned from: the figures `bert-vocab` prints after learning.

On the held-out text's words (normalized and split as the tokenizer does: whitespace, then each punctuation mark
and each CJK ideograph alone; a punctuation mark is a word), tokenized by the package's WordPiece:
- the [UNK] share of pieces, and of words (a word the vocab cannot spell is one [UNK] piece whole);
- pieces per word, and characters per piece (the words' characters over their pieces).
Without a held-out file, `bert-vocab` holds out every `HELD_OUT_EVERY`-th sentence of its input from learning.
"""

import dataclasses

import numpy as np

# bert-vocab holds out one sentence in this many (1%) when no --heldout_file is given.
HELD_OUT_EVERY = 100


@dataclasses.dataclass(frozen=True)
class VocabReport:
    """Counts over a text's words (each occurrence counted) under one vocab.

    Example:
    >>> report = VocabReport(words=4, unknown_words=1, pieces=8, unknown_pieces=1, characters=20)
    >>> report.line("held-out")
    'held-out (4 words): [UNK] 12.500% of pieces, 25.000% of words; 2.000 pieces per word, 2.500 characters per piece'
    """

    words: int
    unknown_words: int
    pieces: int
    unknown_pieces: int
    characters: int

    def line(self, label):
        pieces = max(self.pieces, 1)
        return (f"{label} ({self.words} words): [UNK] {self.unknown_pieces / pieces:.3%} of pieces, "
                f"{self.unknown_words / max(self.words, 1):.3%} of words; {self.pieces / max(self.words, 1):.3f} "
                f"pieces per word, {self.characters / pieces:.3f} characters per piece")


def report_vocab(vocab, words):
    """The `VocabReport` of `vocab` (tokens, file or `Vocabulary`) on `words`, {normalized word: count}
    (`WordCounts.words`).

    Example:
    >>> report_vocab(["[UNK]", "beg", "##at", "a"], {"begat": 2, "a": 1, "xyz": 1})
    VocabReport(words=4, unknown_words=1, pieces=6, unknown_pieces=1, characters=14)
    """
    distinct, pieces, unknown, unknown_word = _word_pieces(vocab, words)
    counts = np.array([words[word] for word in distinct], np.int64)
    lengths = np.array([len(word) for word in distinct], np.int64)
    return VocabReport(words=int(counts.sum()), unknown_words=int(counts[unknown_word].sum()),
                       pieces=int((pieces * counts).sum()), unknown_pieces=int((unknown * counts).sum()),
                       characters=int((lengths * counts).sum()))


def unknown_words(vocab, words):
    """The words of `words` that `vocab` tokenizes as one [UNK] (it cannot spell them).

    >>> unknown_words(["[UNK]", "beg", "##at", "a"], {"begat": 2, "xyz": 1})
    {'xyz'}
    """
    distinct, _, _, unknown_word = _word_pieces(vocab, words)
    return {word for word, unknown in zip(distinct, unknown_word) if unknown}


def _word_pieces(vocab, words):
    """(the distinct words, pieces per word, [UNK] pieces per word, whether the word is one [UNK]) as arrays."""
    from bert_tf.text.tokenizer import FullTokenizer  # TensorFlow: late, so bert-vocab's flags load without it

    # The words are normalized already: the tokenizer only splits them into pieces.
    tokenizer = FullTokenizer(vocab, do_lower_case=False)
    distinct = list(words)
    ids, splits = tokenizer.tokenize_to_ids(distinct)
    pieces = np.diff(splits)
    unknown_before = np.concatenate([[0], np.cumsum(ids == tokenizer.unk_id)])
    unknown = unknown_before[splits[1:]] - unknown_before[splits[:-1]]
    return distinct, pieces, unknown, (pieces == 1) & (unknown == 1)


def hold_out(sentences, held_out, every=HELD_OUT_EVERY):
    """Yields `sentences` but every `every`-th one, which is appended to the list `held_out` instead.

    >>> held = []
    >>> len(list(hold_out(map(str, range(250)), held))), held
    (248, ['99', '199'])
    """
    for i, sentence in enumerate(sentences, 1):
        if i % every:
            yield sentence
        else:
            held_out.append(sentence)

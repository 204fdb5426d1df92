"""Learning WordPiece pieces from word counts: an alphabet sized to the text, then pair merges up to the size asked.

The rule, stated once here:
- The alphabet is every character of the text, most frequent first, at most `max_alphabet_share` of the vocab; each
  is a piece. A character left out makes every word holding it [UNK] whole under the original's WordPiece (so such
  words are left out of the learning), and the characters a text uses rarely are the ones other text uses often:
  German quotation marks rare in manual pages, an ideograph one page uses. Only a text with more distinct
  characters than half the vocab loses its rarest ones.
- A character of the alphabet that continues a word is a "##" piece too, except CJK ideographs (`_CJK_RANGES`) and
  punctuation (`is_punctuation`): the tokenizer puts each of them in a word of its own, so "##" before one can never
  be produced and no such token is learned (kana, Hangul and symbols such as € continue words and keep theirs).
- Then, as Hugging Face tokenizers' WordPiece trainer and the BPE it is built on: every word is its characters'
  pieces; the adjacent pair of pieces with the highest count over the words (weighted by the words' counts) is
  merged into one new piece, everywhere, until the vocab has the size asked for or no pair occurs twice (ties: the
  pair whose pieces came first). A merged piece is the two pieces' text ("##" only where the first one had it), so
  every piece is a prefix or a "##" continuation that the greedy longest-match WordPiece looks up.

Counting the pairs once and then updating only the words a merge touches keeps the learning near linear in the
number of distinct words; most time goes to counting the words (bert_tf/text/word_counting.py).
"""

import collections
import dataclasses
import heapq
import time

from absl import logging

from bert_tf.text.normalization import MAX_CHARS_PER_WORD, is_cjk_character, is_punctuation
from bert_tf.text.word_counting import PROGRESS_SECONDS

CONTINUATION = "##"
# The alphabet takes at most this share of the vocab (the most frequent characters), so pieces get the rest even
# on a text of many thousand distinct ideographs.
DEFAULT_MAX_ALPHABET_SHARE = 0.5


def stands_alone(char):
    """Whether the tokenizer puts `char` in a word of its own (a CJK ideograph or a punctuation mark), so that
    "##" + `char` can never be produced.

    >>> [stands_alone(c) for c in "中,aが€"]
    [True, True, False, False, False]
    """
    return is_cjk_character(char) or is_punctuation(char)


@dataclasses.dataclass(frozen=True)
class Alphabet:
    """The characters kept (most frequent first), those of them kept as "##" continuations too, and how often each
    character of the text occurs.

    Example:
    >>> alphabet = Alphabet.of({"ab": 3, "b": 2, "中": 1, "c": 1}, size_limit=10)
    >>> alphabet.characters, alphabet.continuing, alphabet.unknown_share()
    (['b', 'a', 'c', '中'], ['b'], 0.0)
    >>> Alphabet.of({"ab": 3, "b": 2, "中": 1, "c": 1}, size_limit=2).unknown_share()
    0.2
    """

    characters: list
    continuing: list
    counts: dict

    @classmethod
    def of(cls, words, size_limit):
        """The alphabet of `words` ({word: count}): every character, the most frequent first (ties by the
        character), at most `size_limit`; each as a "##" continuation too when it continues a word and can
        (`stands_alone` is false)."""
        counts, continuing = collections.Counter(), set()
        for word, count in words.items():
            for char in word:
                counts[char] += count
            continuing.update(word[1:])
        kept = sorted(counts, key=lambda c: (-counts[c], c))[:size_limit]
        return cls(kept, [c for c in kept if c in continuing and not stands_alone(c)], dict(counts))

    def unknown_share(self):
        """The share of the text's character occurrences outside the alphabet (their words are [UNK])."""
        kept = set(self.characters)
        return sum(n for c, n in self.counts.items() if c not in kept) / max(sum(self.counts.values()), 1)


def learn_pieces(words, size, max_alphabet_share=DEFAULT_MAX_ALPHABET_SHARE):
    """WordPiece pieces for a vocab of `size` tokens (special tokens not included), learned by the module's rule.

    Args:
        words: {normalized word: count}, e.g. `WordCounts.words`.
        size: the number of pieces wanted; fewer come back when the text has no more pairs occurring twice.

    Returns:
        (pieces, alphabet): the pieces in the order learned (the alphabet's single characters first, then their
        "##" twins, then the merged pieces), and the `Alphabet`.

    Example:
    >>> pieces, alphabet = learn_pieces({"low": 5, "lower": 2, "newest": 6, "widest": 3, "中": 4, ",": 2}, size=30)
    >>> pieces[:4], "##中" in pieces, "##," in pieces, pieces[-3:]
    (['e', 'w', 's', 't'], False, False, ['wi', '##dest', 'widest'])
    """
    alphabet = Alphabet.of(words, int(size * max_alphabet_share))
    pieces = alphabet.characters + [CONTINUATION + c for c in alphabet.continuing]
    # Only words of two characters or more have pairs; one holding a character outside the alphabet is [UNK].
    starts, continues = set(alphabet.characters), set(alphabet.continuing)
    merges = _PairMerges(pieces, [(word, count) for word, count in words.items()
                                  if 1 < len(word) <= MAX_CHARS_PER_WORD and word[0] in starts
                                  and continues.issuperset(word[1:])])
    merges.run(size - len(pieces))
    return merges.pieces, alphabet


class _PairMerges:
    """The words as lists of piece ids, the pairs' counts and which words hold each pair; `run` merges."""

    def __init__(self, pieces, word_counts):
        self.pieces = list(pieces)
        ids = {piece: i for i, piece in enumerate(self.pieces)}
        self.ids = ids
        self.words = []
        self.counts = []
        self.pair_counts = {}
        self.where = {}
        pair_counts, where = self.pair_counts, self.where
        for word, count in word_counts:
            symbols = [ids[word[0]]] + [ids[CONTINUATION + c] for c in word[1:]]
            index = len(self.words)
            self.words.append(symbols)
            self.counts.append(count)
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] = pair_counts.get(pair, 0) + count
                _add_holder(where, pair, index)

    def run(self, merges):
        """Merges the most frequent pair `merges` times at most (while a pair occurs at least twice)."""
        heap = [(-count, pair) for pair, count in self.pair_counts.items()]
        heapq.heapify(heap)
        started = last = time.perf_counter()
        done = 0
        while done < merges and heap:
            negative, pair = heapq.heappop(heap)
            count = self.pair_counts.get(pair, 0)
            if count != -negative:  # stale: the pair's count changed since it was pushed
                if count > 0:
                    heapq.heappush(heap, (-count, pair))
                continue
            if count < 2:
                break
            self._merge(pair, heap)
            done += 1
            now = time.perf_counter()
            if now - last >= PROGRESS_SECONDS:
                logging.info("Learning pieces: %d of %d merges in %.0f s (the last pair occurs %d times).", done,
                             merges, now - started, count)
                last = now
        logging.info("Learned %d pieces by merges in %.1f s.", done, time.perf_counter() - started)

    def _merge(self, pair, heap):
        first, second = pair
        new = len(self.pieces)
        self.pieces.append(self.pieces[first] + self.pieces[second][len(CONTINUATION):])
        where, words, counts = self.where, self.words, self.counts
        changed = {}
        for index in where.pop(pair):
            symbols, count = words[index], counts[index]
            i = 0
            # Only the pairs beside each merged occurrence change: (before, first) and (second, after) go,
            # (before, new) and (new, after) come.
            while i < len(symbols) - 1:
                if symbols[i] != first or symbols[i + 1] != second:
                    i += 1
                    continue
                if i > 0:
                    before = symbols[i - 1]
                    changed[before, first] = changed.get((before, first), 0) - count
                    changed[before, new] = changed.get((before, new), 0) + count
                    _add_holder(where, (before, new), index)
                if i + 2 < len(symbols):
                    after = symbols[i + 2]
                    changed[second, after] = changed.get((second, after), 0) - count
                    changed[new, after] = changed.get((new, after), 0) + count
                    _add_holder(where, (new, after), index)
                symbols[i:i + 2] = [new]
                i += 1
        pair_counts = self.pair_counts
        pair_counts.pop(pair, None)
        for changed_pair, delta in changed.items():
            if not delta or changed_pair == pair:  # the merged pair occurs nowhere now
                continue
            count = pair_counts.get(changed_pair, 0) + delta
            if count > 0:
                pair_counts[changed_pair] = count
                if delta > 0:
                    heapq.heappush(heap, (-count, changed_pair))
            else:
                pair_counts.pop(changed_pair, None)


def _add_holder(where, pair, index):
    holders = where.get(pair)
    if holders is None:
        where[pair] = {index}
    else:
        holders.add(index)

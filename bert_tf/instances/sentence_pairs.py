"""Sentence pairs from documents: `SentencePairRules`, the one description of how the original
`create_instances_from_document` and `truncate_seq_pair` build and cut pairs, and their offline execution.

The rules (`SentencePairRules` holds every number in them):
- One target length per document: max_num_tokens (max_seq_length - 3, room for [CLS], [SEP], [SEP]), or with
  probability short_seq_prob a length drawn uniformly from [min_target_length (2), max_num_tokens].
- Sentences accumulate into a chunk until its length reaches the target or the document ends.
- a_end = randint(1, len(chunk) - 1) if the chunk has two sentences or more, else 1; A = chunk[:a_end].
- B is a random next (label 1) when the chunk has one sentence or with probability random_next_prob (0.5):
  another document (up to random_document_tries (10) draws, the last kept), a random start sentence, sentences
  until B reaches target - len(A); the chunk's unused sentences are put back (the next chunk starts after A).
  Otherwise B = chunk[a_end:] (label 0).
- Truncation keeps max_num_tokens: the original removes one token at a time from the longer segment (B on a tie),
  so how many each side loses is `text/packing.pair_keep_lengths`; each token goes from the front with
  probability front_cut_prob (0.5), else from the back.

This module runs the rules, replaying the original's `random.Random` draws in the original's order, so that from
the same documents and generator state it builds the original's pairs exactly (tests/test_create_pretraining_data.py;
the records still differ from the original script's, since `bert-create-pretraining-data` draws per shard and
masks with numpy, see `bert_tf/instances/pipeline.py`). Every number comes from `SentencePairRules` and the cut
lengths from `pair_keep_lengths`.

Here pairs are token spans: a sentence is the span [start, stop) of a flat token array, so segment A, segment B
and their truncation are spans too, and the tokens are gathered later, all instances at once.
"""

import dataclasses
from typing import NamedTuple

from bert_tf.errors import InputError
from bert_tf.text.packing import pair_keep_lengths


@dataclasses.dataclass(frozen=True)
class SentencePairRules:
    """What sentence-pair building does, as data: the target lengths, the random nexts and the truncation.

    Args:
        max_seq_length: the length of a packed instance; A and B together keep at most max_seq_length - 3 tokens.
        short_seq_prob: the share of documents given a shorter, random target length (original default 0.1).
        random_next_prob: the share of chunks of two sentences or more whose B is a random next (0.5).
        min_target_length: the shortest random target length (2).
        random_document_tries: how many times the original draws a random document until it is not the chunk's
            own (10); when every draw hits its own, the random next comes from its own document.
        front_cut_prob: the share of truncated tokens removed from a segment's front rather than its back (0.5).

    Example:
    >>> rules = SentencePairRules(max_seq_length=128)
    >>> rules.max_num_tokens, rules.short_seq_prob, rules.random_next_prob
    (125, 0.1, 0.5)
    >>> rules.same_document_probability(2)  # each of the 10 tries drew the chunk's own of 2 documents
    0.0009765625
    """

    max_seq_length: int = 128
    short_seq_prob: float = 0.1
    random_next_prob: float = 0.5
    min_target_length: int = 2
    random_document_tries: int = 10
    front_cut_prob: float = 0.5

    def __post_init__(self):
        if self.max_seq_length < 5:
            raise InputError(f"max_seq_length={self.max_seq_length} is too short: an instance needs [CLS], [SEP], "
                             f"[SEP] and at least one token in each segment; use 128 or 512 as the original.")
        for name in ("short_seq_prob", "random_next_prob", "front_cut_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise InputError(f"{name}={getattr(self, name)} must lie in [0, 1]; the original uses "
                                 f"{getattr(SentencePairRules, name)}.")
        if not 1 <= self.min_target_length <= self.max_num_tokens:
            raise InputError(f"min_target_length={self.min_target_length} must lie in [1, max_num_tokens="
                             f"{self.max_num_tokens}]; the original uses 2.")
        if self.random_document_tries < 1:
            raise InputError(f"random_document_tries={self.random_document_tries} must be at least 1; the original "
                             f"uses 10.")

    @property
    def max_num_tokens(self):
        """Tokens of A and B together: room for [CLS], [SEP], [SEP]."""
        return self.max_seq_length - 3

    def same_document_probability(self, num_documents):
        """The chance that a random next comes from the chunk's own document: every try drew it, each with
        probability 1 / num_documents (an int, or a float tensor). Else the random document is uniform over the
        others."""
        return (1.0 / num_documents) ** self.random_document_tries

    def expected_random_next_share(self, one_sentence_share):
        """The share of random nexts among instances when `one_sentence_share` of them come from one-sentence
        chunks (always random next).

        Example:
        >>> SentencePairRules().expected_random_next_share(0.1)
        0.55
        """
        return self.random_next_prob + (1.0 - self.random_next_prob) * one_sentence_share


class PairSpan(NamedTuple):
    """One instance before its tokens are gathered: A = tokens[a_start:a_stop], B = tokens[b_start:b_stop].

    Example:
    >>> PairSpan(0, 3, 12, 17, is_random_next=True, one_sentence_chunk=False).b_stop
    17
    """

    a_start: int
    a_stop: int
    b_start: int
    b_stop: int
    is_random_next: bool
    one_sentence_chunk: bool  # a chunk of one sentence is always a random next (the excess over 50% NSP)


def truncate_seq_pair(a, b, rules, rng):
    """Trims spans a = [start, stop] and b (lists, changed in place) to `rules.max_num_tokens` together, drawing
    from `rng` (a `random.Random`) as the original does.

    How many tokens each side loses is `pair_keep_lengths`'; only the front/back split is drawn. The original
    draws once per removed token, in the order it removes them: from the longer side until both are as long, then
    B, A, B, A, ...; each side's draws below front_cut_prob are the tokens it loses at the front.

    Example:
    >>> import random
    >>> a, b = [0, 6], [10, 13]
    >>> truncate_seq_pair(a, b, SentencePairRules(max_seq_length=8), random.Random(0))
    >>> a[1] - a[0], b[1] - b[0]
    (3, 2)
    """
    len_a, len_b, budget = a[1] - a[0], b[1] - b[0], rules.max_num_tokens
    if len_a + len_b <= budget:
        return
    keep_a, keep_b = pair_keep_lengths(len_a, len_b, budget)
    cut_a, cut_b = len_a - keep_a, len_b - keep_b
    draws = [rng.random() for _ in range(cut_a + cut_b)]
    lead = min(len(draws), abs(len_a - len_b))
    a_draws, b_draws = draws[lead + 1::2], draws[lead::2]
    if len_a > len_b:
        a_draws = draws[:lead] + a_draws
    else:
        b_draws = draws[:lead] + b_draws
    is_front = rules.front_cut_prob.__gt__
    for side, cut, side_draws in ((a, cut_a, a_draws), (b, cut_b, b_draws)):
        # The original trims sometimes the front, sometimes the back, "to add more randomness and avoid biases".
        front = sum(map(is_front, side_draws))
        side[0] += front
        side[1] -= cut - front


def instances_from_document(documents, document_index, sentence_starts, rules, rng):
    """The `PairSpan`s of one document.

    Args:
        documents: (first sentence, stop sentence) per document, in the (shuffled) order random next documents are
            drawn from; every document has at least one sentence and every sentence at least one token.
        document_index: the document to cut into instances.
        sentence_starts: token offset of each sentence, plus the end of the last one (a list, for speed).
        rules: the `SentencePairRules`.
        rng: a `random.Random`.

    Example:
    >>> import random
    >>> documents = [(0, 3), (3, 5)]          # sentences 0-2 and 3-4
    >>> sentence_starts = [0, 4, 9, 12, 15, 20]
    >>> spans = instances_from_document(documents, 0, sentence_starts, SentencePairRules(max_seq_length=16),
    ...                                 random.Random(1))
    >>> all(s.a_stop - s.a_start + s.b_stop - s.b_start <= 13 for s in spans)
    True
    """
    max_num_tokens = rules.max_num_tokens
    first, stop = documents[document_index]
    target_seq_length = max_num_tokens
    if rng.random() < rules.short_seq_prob:
        target_seq_length = rng.randint(rules.min_target_length, max_num_tokens)

    instances = []
    chunk_first = first  # the current chunk is sentences [chunk_first, i]
    current_length = 0
    i = first
    while i < stop:
        current_length += sentence_starts[i + 1] - sentence_starts[i]
        if i == stop - 1 or current_length >= target_seq_length:
            chunk_size = i + 1 - chunk_first
            a_end = 1
            if chunk_size >= 2:
                a_end = rng.randint(1, chunk_size - 1)
            a = [sentence_starts[chunk_first], sentence_starts[chunk_first + a_end]]

            if chunk_size == 1 or rng.random() < rules.random_next_prob:
                is_random_next = True
                target_b_length = target_seq_length - (a[1] - a[0])
                for _ in range(rules.random_document_tries):
                    random_document_index = rng.randint(0, len(documents) - 1)
                    if random_document_index != document_index:
                        break
                random_first, random_stop = documents[random_document_index]
                random_start = random_first + rng.randint(0, random_stop - random_first - 1)
                b = [sentence_starts[random_start], sentence_starts[random_start]]
                for j in range(random_start, random_stop):
                    b[1] = sentence_starts[j + 1]
                    if b[1] - b[0] >= target_b_length:
                        break
                # The unused sentences of the chunk are "put back": the next chunk starts after A.
                i -= chunk_size - a_end
            else:
                is_random_next = False
                b = [sentence_starts[chunk_first + a_end], sentence_starts[i + 1]]
            truncate_seq_pair(a, b, rules, rng)
            instances.append(PairSpan(a[0], a[1], b[0], b[1], is_random_next, chunk_size == 1))
            chunk_first = i + 1
            current_length = 0
        i += 1
    return instances

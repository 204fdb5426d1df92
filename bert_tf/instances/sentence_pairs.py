"""Sentence pairs from documents: the original `create_instances_from_document` and `truncate_seq_pair`.

Line by line the original's control flow and random draws (a `random.Random`), on token spans instead of token
lists: a sentence is the span [start, stop) of a flat token array, so segment A, segment B and their truncation
are spans too, and the tokens are gathered later, all instances at once.

- One target length per document: max_num_tokens, or with probability short_seq_prob randint(2, max_num_tokens).
- Sentences accumulate into a chunk until its length reaches the target or the document ends.
- a_end = randint(1, len(chunk) - 1) if the chunk has two sentences or more, else 1; A = chunk[:a_end].
- B is a random next (label 1) when the chunk has one sentence or random() < 0.5: another document (up to 10
  tries), a random start sentence, sentences until B reaches target - len(A); the chunk's unused sentences are put
  back (i -= len(chunk) - a_end). Otherwise B = chunk[a_end:] (label 0).
- truncate_seq_pair trims the longer segment (B on a tie), from the front or the back with probability 0.5 each.
"""

from typing import NamedTuple


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


def truncate_seq_pair(a, b, max_num_tokens, rng):
    """Trims spans a = [start, stop] and b (lists, changed in place) until they hold max_num_tokens together.

    The original pops one token at a time from the longer list (B on a tie), from the front if rng.random() < 0.5
    else from the back. Which side each pop hits depends only on the lengths: the longer side until both are
    equal, then B, A, B, A, ... So the same draws, in the same order, are consumed and applied in one go.
    """
    len_a, len_b = a[1] - a[0], b[1] - b[0]
    excess = len_a + len_b - max_num_tokens
    if excess <= 0:
        return
    draws = [rng.random() for _ in range(excess)]
    first = min(excess, abs(len_a - len_b))
    longer = a if len_a > len_b else b
    alternating = draws[first:]
    for side, side_draws in ((longer, draws[:first]), (b, alternating[0::2]), (a, alternating[1::2])):
        # The original trims sometimes the front, sometimes the back, "to add more randomness and avoid biases".
        front = sum(map((0.5).__gt__, side_draws))
        side[0] += front
        side[1] -= len(side_draws) - front


def instances_from_document(documents, document_index, sentence_starts, max_num_tokens, short_seq_prob, rng):
    """The `PairSpan`s of one document.

    Args:
        documents: (first sentence, stop sentence) per document, in the (shuffled) order random next documents are
            drawn from; every document has at least one sentence and every sentence at least one token.
        document_index: the document to cut into instances.
        sentence_starts: token offset of each sentence, plus the end of the last one (a list, for speed).
        max_num_tokens: max_seq_length - 3.
        short_seq_prob: probability of a shorter target length for this document.
        rng: a `random.Random`.

    Example:
    >>> import random
    >>> documents = [(0, 3), (3, 5)]          # sentences 0-2 and 3-4
    >>> sentence_starts = [0, 4, 9, 12, 15, 20]
    >>> spans = instances_from_document(documents, 0, sentence_starts, 125, 0.1, random.Random(1))  # doctest: +SKIP
    """
    first, stop = documents[document_index]
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

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

            if chunk_size == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - (a[1] - a[0])
                for _ in range(10):
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
            truncate_seq_pair(a, b, max_num_tokens, rng)
            instances.append(PairSpan(a[0], a[1], b[0], b[1], is_random_next, chunk_size == 1))
            chunk_first = i + 1
            current_length = 0
        i += 1
    return instances

"""The sentence-pair rules (`SentencePairRules`, run by bert_tf/instances/sentence_pairs.py with the original's
`random.Random` draws in the original's order) measured on a synthetic corpus: bounds, labels, one-sentence chunks,
the random document's tries and the truncation, under the original's numbers and others.
tests/test_create_pretraining_data.py checks the same execution pair by pair against the original's code."""

import random

import numpy as np
import pytest

from bert_tf.instances.sentence_pairs import SentencePairRules, instances_from_document, truncate_seq_pair
from helpers import original_truncation

FIRST_TOKEN = 5
SEEDS = range(16)


def corpus(num_docs, max_sentences, seed, min_sentences=1):
    """Documents of min_sentences..max_sentences sentences of 1..29 tokens; token ids are unique and increase through
    the corpus, so a token says which document it came from."""
    rng = np.random.default_rng(seed)
    documents, next_id = [], FIRST_TOKEN
    for _ in range(num_docs):
        sentences = []
        for _ in range(int(rng.integers(min_sentences, max_sentences + 1))):
            length = int(rng.integers(1, 30))
            sentences.append(list(range(next_id, next_id + length)))
            next_id += length
        documents.append(sentences)
    return documents


def document_of_token(documents):
    lengths = [sum(len(s) for s in document) for document in documents]
    return np.repeat(np.arange(len(documents)), lengths)  # index: token id - FIRST_TOKEN


def offline(documents, rules):
    """The offline execution, one pass per seed: {a, b: lengths, label, same_document, one_sentence_chunk}."""
    sentence_lengths = [len(s) for document in documents for s in document]
    sentence_starts = np.concatenate([[0], np.cumsum(sentence_lengths)]).tolist()
    splits = np.concatenate([[0], np.cumsum([len(d) for d in documents])]).tolist()
    spans = [(splits[d], splits[d + 1]) for d in range(len(documents))]
    doc_of = document_of_token(documents)
    rows = []
    for seed in SEEDS:
        rng = random.Random(seed)
        for index in range(len(documents)):
            rows.extend(instances_from_document(spans, index, sentence_starts, rules, rng))
    rows = np.array(rows, np.int64)
    return {"a": rows[:, 1] - rows[:, 0], "b": rows[:, 3] - rows[:, 2], "label": rows[:, 4],
            "same_document": doc_of[rows[:, 0]] == doc_of[rows[:, 2]], "one_sentence_chunk": rows[:, 5] == 1}


@pytest.mark.parametrize("rules", [SentencePairRules(max_seq_length=64),
                                   SentencePairRules(max_seq_length=32, short_seq_prob=0.5, random_next_prob=0.3)],
                         ids=["original", "other_rules"])
def test_pairs_follow_the_rules_on_one_corpus(rules):
    documents = corpus(120, 12, seed=0)
    pairs = offline(documents, rules)
    total = pairs["a"] + pairs["b"]
    assert len(total) > 1500
    # Each segment keeps a token, and the pair fits.
    assert pairs["a"].min() >= 1 and pairs["b"].min() >= 1 and total.max() <= rules.max_num_tokens
    # An actual next (label 0) continues A's document; a random next comes from another one (10 tries at a
    # random document among 120 all hitting A's own: never, here).
    assert np.all(pairs["same_document"][pairs["label"] == 0])
    assert not np.any(pairs["same_document"][pairs["label"] == 1])
    # One-sentence chunks are always random next, and the label share is random_next_prob plus the rest of the
    # one-sentence chunks' share.
    assert np.all(pairs["label"][pairs["one_sentence_chunk"]] == 1)
    single = pairs["one_sentence_chunk"].mean()
    assert 0.05 < single < 0.6
    expected = rules.expected_random_next_share(single)
    assert abs(pairs["label"].mean() - expected) < 0.03, (pairs["label"].mean(), expected)


def test_one_sentence_documents_give_random_nexts_only():
    documents = [[sentence] for sentence in sum(corpus(60, 3, seed=1), [])]
    pairs = offline(documents, SentencePairRules(max_seq_length=32))
    assert len(pairs["label"]) > 500 and np.all(pairs["label"] == 1)


def test_the_random_document_is_drawn_as_the_originals_tries():
    # With two documents and one try, a random next comes from A's own document half the time; with the
    # original's ten tries, about once in a thousand.
    documents = corpus(2, 150, seed=2, min_sentences=150)
    for tries, low, high in ((1, 0.4, 0.6), (10, 0.0, 0.01)):
        rules = SentencePairRules(max_seq_length=32, random_document_tries=tries)
        pairs = offline(documents, rules)
        random_next = pairs["label"] == 1
        assert random_next.sum() > 400
        assert low <= pairs["same_document"][random_next].mean() <= high, (tries, pairs["same_document"].mean())


def test_truncation_keeps_max_num_tokens_and_cuts_front_and_back_alike():
    rng = np.random.default_rng(3)
    rules = SentencePairRules(max_seq_length=40)
    count = 4000
    a_start = rng.integers(0, 1000, count)
    a_stop = a_start + rng.integers(1, 60, count)
    b_start = rng.integers(2000, 3000, count)
    b_stop = b_start + rng.integers(1, 60, count)
    python_rng = random.Random(0)
    offline_spans = []
    for row in zip(a_start.tolist(), a_stop.tolist(), b_start.tolist(), b_stop.tolist()):
        a, b = list(row[:2]), list(row[2:])
        truncate_seq_pair(a, b, rules, python_rng)
        offline_spans.append(a + b)
    spans = np.array(offline_spans).T
    cut = a_stop - a_start + b_stop - b_start > rules.max_num_tokens
    assert 0.3 < cut.mean() < 0.9
    kept_a, kept_b = spans[1] - spans[0], spans[3] - spans[2]
    # The pair keeps max_num_tokens when it is cut, each side a sub-span of its own, as many tokens as the
    # original's loop leaves (one token at a time from the longer side, B on a tie).
    assert np.all(np.where(cut, kept_a + kept_b == rules.max_num_tokens,
                           (spans == [a_start, a_stop, b_start, b_stop]).all(axis=0)))
    assert np.all((spans[0] >= a_start) & (spans[1] <= a_stop) & (spans[2] >= b_start) & (spans[3] <= b_stop))
    np.testing.assert_array_equal(np.stack([kept_a, kept_b], axis=1), [
        original_truncation(a, b, rules.max_num_tokens) for a, b in zip(a_stop - a_start, b_stop - b_start)])
    front = ((spans[0] - a_start + spans[2] - b_start).sum()
             / (a_stop - a_start + b_stop - b_start - kept_a - kept_b).sum())
    assert abs(front - rules.front_cut_prob) < 0.02, front


@pytest.mark.parametrize("field,value,message", [
    ("max_seq_length", 4, "max_seq_length=4 is too short"),
    ("short_seq_prob", 1.5, "short_seq_prob=1.5 must lie in [0, 1]; the original uses 0.1"),
    ("random_next_prob", -0.1, "random_next_prob=-0.1 must lie in [0, 1]; the original uses 0.5"),
    ("min_target_length", 200, "min_target_length=200 must lie in [1, max_num_tokens=125]"),
    ("random_document_tries", 0, "random_document_tries=0 must be at least 1"),
])
def test_bad_rules_are_named(field, value, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        SentencePairRules(**{field: value})

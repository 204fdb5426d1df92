"""bert-vocab's learner: words counted as the tokenizer splits them, an alphabet sized to the text, no "##" token the
tokenizer can never produce, pair merges to the size asked for, and the held-out report's figures."""

import collections
import functools
import random

import numpy as np
import pytest

from bert_tf.instances.statistics import InstanceStatistics, unknown_line
from bert_tf.text import word_counting
from bert_tf.text.normalization import is_cjk_character, is_punctuation, normalize, split_words
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.text.vocab_learning import learn_vocab
from bert_tf.text.vocab_report import VocabReport, report_vocab
from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary, read_vocab_file
from bert_tf.text.wordpiece_learner import learn_pieces
from helpers import run_cli

pytestmark = pytest.mark.slow  # starts counting processes, runs bert-vocab and TensorFlow's WordPiece

# Control characters that are whitespace to str.split but deleted by the normalization, NBSP, an ideographic
# space, CJK inside a word, Greek final sigma, a combining accent, format characters, line and paragraph separators.
TRICKY = ["ΟΔΟΣ\x1cΑ x", "a\x00b c\u00a0d\u3000中文字", "Café naïve\u0301 ok", "don't, stop!!",
          "ab\x0bcd e\x85f \u2028g\u2029h", "\u200dzw\u00adj", "パンダが見た。Ünïcödé"]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_words_are_counted_as_the_tokenizer_splits_them_in_one_process_or_two(monkeypatch, do_lower_case):
    normalize_text = functools.partial(normalize, do_lower_case=do_lower_case)
    sentences = TRICKY * 50
    expected = collections.Counter(w for s in sentences for w in split_words(normalize_text(s)))
    assert word_counting.count_words(sentences, normalize_text, processes=1).words == expected
    monkeypatch.setattr(word_counting, "CHUNK_CHARACTERS", 2000)  # several chunks: the processes start
    counts = word_counting.count_words(iter(sentences), normalize_text, processes=2)
    assert counts.words == expected and counts.sentences == len(sentences)


def merged_by_recounting(words, size):
    """The pair merges done the plain way: every pair recounted over every word before each merge."""
    characters, continuing = collections.Counter(), set()
    for word, count in words.items():
        for char in word:
            characters[char] += count
        continuing.update(word[1:])
    alphabet = sorted(characters, key=lambda c: (-characters[c], c))
    pieces = alphabet + ["##" + c for c in alphabet if c in continuing]
    ids = {piece: i for i, piece in enumerate(pieces)}
    split = {w: [ids[w[0]]] + [ids["##" + c] for c in w[1:]] for w in words if len(w) > 1}
    while len(pieces) < size:
        pairs = collections.Counter()
        for word, symbols in split.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += words[word]
        best = min(pairs, key=lambda p: (-pairs[p], p), default=None)
        if best is None or pairs[best] < 2:
            break
        pieces.append(pieces[best[0]] + pieces[best[1]][2:])
        for word, symbols in split.items():
            merged, i = [], 0
            while i < len(symbols):
                if tuple(symbols[i:i + 2]) == best:
                    merged.append(len(pieces) - 1)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            split[word] = merged
    return pieces


def test_the_incremental_merges_equal_merges_by_recounting():
    rng = random.Random(1)
    for _ in range(20):
        words = {"".join(rng.choice("aabbcd") for _ in range(rng.randint(1, 8))): rng.randint(1, 9)
                 for _ in range(40)}
        pieces, _ = learn_pieces(words, 70)
        assert pieces == merged_by_recounting(words, 70)


def test_the_alphabet_keeps_every_character_and_no_impossible_continuations():
    sentences = (["北京大学的学生在图书馆里读书，他们说：“读书很好！”", "パンダがビルを見た。かわいいパンダだ！",
                  "Ein Bär aß Käse für 5€, sagte er.", "한국어 문장입니다. 좋아요!"] * 20 + ["稀字 ½ once"])
    normalize_text = functools.partial(normalize, do_lower_case=False)
    learned = learn_vocab(sentences, vocab_size=400, normalize_text=normalize_text)
    tokens = learned.tokens
    impossible = [t for t in tokens if t.startswith("##") and len(t) > 2
                  and (is_cjk_character(t[2]) or is_punctuation(t[2]))]
    assert impossible == []
    assert {"##ン", "##ダ", "##국", "##€", "##ä"} <= set(tokens)  # kana, Hangul, € and letters continue words
    characters = collections.Counter(c for s in sentences for c in normalize_text(s) if not c.isspace())
    assert {"稀", "字", "½"} <= set(tokens) and set(characters) <= set(tokens)  # seen once, kept all the same
    assert learned.alphabet_size == learned.distinct_characters == len(characters)
    assert learned.alphabet_line() == (f"alphabet: {len(characters)} of the text's {len(characters)} distinct "
                                       f"characters (every one); 0.0000% of the character occurrences fall outside "
                                       f"it (their words are [UNK])")
    # A text with more distinct characters than half the vocab keeps the most frequent ones.
    small = learn_vocab(sentences, vocab_size=5 + 2 * 40, normalize_text=normalize_text)
    assert small.alphabet_size == 40 and small.unknown_character_share > 0
    kept = set(small.tokens)
    assert all(characters[c] >= characters[d] for c in characters if c in kept for d in characters if d not in kept)
    assert small.alphabet_line().startswith(f"alphabet: 40 of the text's {len(characters)} distinct characters (the "
                                            f"most frequent, as many as 50% of the vocab); ")


def test_the_vocab_is_learned_to_the_size_asked_with_the_special_tokens_first():
    sentences = [f"The {w}s {v} the {o}." for w in ("cat", "dog", "bird", "horse") for v in ("saw", "heard", "fed")
                 for o in ("farmer", "children", "neighbours", "wanderer")] * 5
    for size in (60, 80):
        tokens = learn_vocab(sentences, vocab_size=size).tokens
        assert tokens[:5] == list(SPECIAL_TOKENS) and len(tokens) == size == len(set(tokens))
    tokens = learn_vocab(sentences, vocab_size=200).tokens
    assert len(tokens) == 89  # every word whole: no pair is left to merge
    tokenizer = FullTokenizer(tokens)
    assert tokenizer.tokenize("The horses fed the neighbours.") == ["the", "horses", "fed", "the", "neighbours", "."]


def test_the_report_counts_pieces_and_words_of_each_occurrence():
    vocab = ["[PAD]", "[UNK]", "beg", "##at", "a", "中", "."]
    # begat: 2 pieces (x3); a: 1; 中: 1; .: 1; xyz: [UNK] (x2); 文: [UNK]
    words = {"begat": 3, "a": 1, "中": 1, ".": 1, "xyz": 2, "文": 1}
    report = report_vocab(vocab, words)
    assert report == VocabReport(words=9, unknown_words=3, pieces=12, unknown_pieces=3,
                                 characters=15 + 1 + 1 + 1 + 6 + 1)
    assert report.line("held-out") == ("held-out (9 words): [UNK] 25.000% of pieces, 33.333% of words; 1.333 pieces "
                                       "per word, 2.083 characters per piece")


def test_bert_vocab_prints_the_alphabet_and_the_report_on_held_out_text(tmp_path):
    corpus, heldout, output = tmp_path / "corpus.txt", tmp_path / "heldout.txt", tmp_path / "vocab.txt"
    corpus.write_text("The Lord is my shepherd.\nHe restores my soul.\n\nJesus wept.\n" * 50, encoding="utf-8")
    heldout.write_text("The Lord wept.\nMy sheep, my Qoheleth.\n", encoding="utf-8")
    done = run_cli("vocab", f"--input_file={corpus}", "--vocab_size=40", f"--output_file={output}",
                   f"--heldout_file={heldout}")
    assert done.returncode == 0, done.stderr[-2000:]
    tokens = read_vocab_file(output)
    assert len(tokens) == 40
    report = report_vocab(tokens, collections.Counter(w for line in ("The Lord wept.", "My sheep, my Qoheleth.")
                                                      for w in split_words(normalize(line))))
    assert report.unknown_words == 2  # "," and qoheleth: "," and "q" are not in the text
    assert report.line(f"held-out text {heldout}") in done.stdout.splitlines()
    characters = len(set("the lord is my shepherd.he restores my soul.jesus wept.") - {" "})
    assert (f"alphabet: {characters} of the text's {characters} distinct characters (every one); 0.0000% of the "
            f"character occurrences fall outside it") in done.stdout
    held = run_cli("vocab", f"--input_file={corpus}", "--vocab_size=40", f"--output_file={output}")
    assert held.returncode == 0, held.stderr[-2000:]
    assert "held-out text: every 100th sentence of the input (1), not learned from (6 words): [UNK] 0.000%" in \
        held.stdout


def test_instance_statistics_count_the_unk_tokens_before_masking():
    # ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4. Positions 2 and 4 are predicted: position 2 held [UNK]
    # and shows [MASK]; position 4 held 7 and shows a random [UNK]. Position 3 is an [UNK] not predicted.
    stats = InstanceStatistics(max_seq_length=8, max_predictions_per_seq=2)
    input_ids = np.array([[2, 6, 4, 1, 1, 3, 0, 0]])
    vocab = Vocabulary(list(SPECIAL_TOKENS) + ["a", "b", "c"], "a test vocab")
    stats.add(np.array([6]), input_ids, np.array([[2, 4]]), np.array([[1, 7]]), np.array([2]), np.array([0]), None,
              vocab)
    assert (stats.unknown, stats.tokens) == (2, 6)
    assert unknown_line(stats.unknown, stats.tokens) in stats.summary_lines()
    assert unknown_line(2, 6) == "[UNK]: 2 of 6 tokens (33.333%)"

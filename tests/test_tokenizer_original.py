"""FullTokenizer against the original google-research/bert tokenization.py: its own test cases, re-typed, and
real and perturbed text against a plain-Python re-implementation of the original algorithm written here."""

import os
import unicodedata

import numpy as np
import pytest

from bert_tf.text.normalization import is_punctuation, normalize, split_words
from bert_tf.text.tokenizer import FullTokenizer

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
ORIGINAL_TEST_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ","]


class OriginalTokenizer:
    """The original BasicTokenizer + WordpieceTokenizer, character by character, as tokenization.py writes them.

    `max_chars` and `deleted_categories` default to the original's (200; Cc and Cf); transformers' port, which
    wrote tests/fixtures/tokenizer_reference.npz, uses 100 and every category starting with "C".
    """

    def __init__(self, tokens, do_lower_case=True, max_chars=200, deleted_categories=("Cc", "Cf")):
        self.vocab = {t: i for i, t in enumerate(tokens)}
        self.do_lower_case = do_lower_case
        self.max_chars = max_chars
        self.deleted_categories = deleted_categories

    def is_control(self, char):
        if char in "\t\n\r":
            return False
        category = unicodedata.category(char)
        return category in self.deleted_categories or (self.deleted_categories == "C" and category[0] == "C")

    @staticmethod
    def is_whitespace(char):
        return char in " \t\n\r" or unicodedata.category(char) == "Zs"

    @staticmethod
    def is_punctuation(char):
        cp = ord(char)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(char).startswith("P")

    @staticmethod
    def is_chinese(cp):
        return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
                or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
                or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)

    def basic_tokens(self, text):
        cleaned = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or self.is_control(char):
                continue
            cleaned.append(" " if self.is_whitespace(char) else char)
        spaced = "".join(f" {c} " if self.is_chinese(ord(c)) else c for c in cleaned)
        words = []
        for token in spaced.strip().split():
            if self.do_lower_case:
                token = "".join(c for c in unicodedata.normalize("NFD", token.lower())
                                if unicodedata.category(c) != "Mn")
            current = []
            for char in token:
                if self.is_punctuation(char):
                    if current:
                        words.append("".join(current))
                    words.append(char)
                    current = []
                else:
                    current.append(char)
            if current:
                words.append("".join(current))
        return " ".join(words).strip().split()

    def wordpieces(self, word):
        if len(word) > self.max_chars:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = ("##" if start > 0 else "") + word[start:end]
                if piece in self.vocab:
                    found = piece
                    break
                end -= 1
            if found is None:
                return ["[UNK]"]
            pieces.append(found)
            start = end
        return pieces

    def tokenize(self, text):
        return [piece for word in self.basic_tokens(text) for piece in self.wordpieces(word)]

    def ids(self, text):
        return [self.vocab[t] for t in self.tokenize(text)]


def rows(ids, row_splits):
    return [ids[a:b].tolist() for a, b in zip(row_splits[:-1], row_splits[1:])]


@pytest.fixture(scope="module")
def uncased_tokens(uncased_vocab):
    with open(uncased_vocab, encoding="utf-8") as f:
        return [line.strip() for line in f.read().split("\n")[:-1]]


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(uncased_vocab, do_lower_case=True)


# The cases of the original tokenization_test.py.

def test_original_full_tokenizer_case_with_its_vocab_without_pad_and_mask():
    tokenizer = FullTokenizer(ORIGINAL_TEST_VOCAB)
    tokens = tokenizer.tokenize("UNwant\u00E9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]


def test_original_chinese_case():
    assert split_words(normalize("ah\u535A\u63A8zz")) == ["ah", "\u535A", "\u63A8", "zz"]


def test_original_basic_tokenizer_cases():
    assert split_words(normalize(" \tHeLLo!how  \n Are yoU?  ")) == ["hello", "!", "how", "are", "you", "?"]
    assert split_words(normalize("H\u00E9llo")) == ["hello"]
    assert split_words(normalize(" \tHeLLo!how  \n Are yoU?  ", do_lower_case=False)) == [
        "HeLLo", "!", "how", "Are", "yoU", "?"]


def test_original_wordpiece_cases():
    tokenizer = FullTokenizer(ORIGINAL_TEST_VOCAB[:-1], do_lower_case=False)
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(["un", "##want", "##ed", "runn", "##ing"]) == [7, 4, 5, 8, 9]


def test_original_character_class_cases():
    for char in (" ", "\t", "\r", "\n", "\u00A0"):  # whitespace
        assert normalize(char, do_lower_case=False) == " "
    for char in ("A", "-"):
        assert normalize(char, do_lower_case=False) == char
    assert normalize("\u0005", do_lower_case=False) == ""  # control: deleted
    for char in ("A", " ", "\t", "\r"):
        assert normalize(char, do_lower_case=False) != ""
    assert all(is_punctuation(c) for c in "-$`.") and not any(is_punctuation(c) for c in "A ")


# Real text and every code point of the fixture.

def test_reference_reproduces_the_transformers_port_fixture_with_its_two_settings(uncased_tokens):
    # The fixture's ids come from transformers' port (100 characters a word, every C* category deleted): the
    # reference given those two settings must give exactly them, which checks the reference itself.
    data = np.load(os.path.join(FIXTURES, "tokenizer_reference.npz"))
    texts = [str(t) for t in data["texts"]]
    port = OriginalTokenizer(uncased_tokens, max_chars=100, deleted_categories="C")
    assert [port.ids(t) for t in texts] == rows(data["ids"], data["row_splits"])


def test_ids_equal_the_original_on_the_fixture_texts(tokenizer, uncased_tokens):
    data = np.load(os.path.join(FIXTURES, "tokenizer_reference.npz"))
    texts = [str(t) for t in data["texts"]]
    original = OriginalTokenizer(uncased_tokens)
    ids, row_splits = tokenizer.tokenize_to_ids(texts)
    mismatches = [texts[i][:60] for i, got in enumerate(rows(ids, row_splits)) if got != original.ids(texts[i])]
    assert not mismatches, mismatches[:5]
    # The two settings matter on these texts: over-long words and unassigned code points.
    port = rows(data["ids"], data["row_splits"])
    assert sum(port[i] != original.ids(t) for i, t in enumerate(texts)) >= 3


def perturbed_texts(tokens, count, seed=0):
    """Sentences of vocab words with control, format, private-use, unassigned, combining, CJK and emoji characters
    and words of 199 to 201 characters mixed in."""
    rng = np.random.default_rng(seed)
    words = [t for t in tokens if t.isalpha() and not t.startswith("##") and len(t) > 1][:8000]
    inserts = (["\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\x9f", "\u00ad", "\u200b", "\u200d", "\u2060",
                "\ufeff", "\ufffd", "\U000e0001"]                                   # control, format, U+FFFD
               + ["\ue000", "\uf8ff", "\U000f0000", "\U0010fffd"]                  # private use
               + ["\u0378", "\u0530", "\U000e0080", "\U0003fffe"]                  # unassigned
               + ["\u0301", "\u0308", "\u0327", "\u20dd", "\u0903"]                # combining marks
               + ["中", "文", "\u3400", "\U00020000", "\uf900", "\u3042", "한"]    # CJK and kana, hangul
               + ["😀", "👍🏽", "👨\u200d👩\u200d👧", "\u2764\ufe0f", "🇫🇷", "☺"]  # emoji
               + ["\u2028", "\u2029", "\u00a0", "\u3000", "\t", "\r\n", "\x0b", "\x0c"])
    long_letters = ["a", "é", "x", "ü", "ß"]
    texts = []
    for _ in range(count):
        pieces = list(rng.choice(words, rng.integers(1, 12)))
        for _ in range(rng.integers(1, 4)):
            position = int(rng.integers(0, len(pieces) + 1))
            kind = rng.random()
            if kind < 0.15:
                pieces.insert(position, str(rng.choice(long_letters)) * int(rng.choice([199, 200, 201])))
            elif kind < 0.6:  # inside a word
                word = pieces[min(position, len(pieces) - 1)]
                cut = int(rng.integers(0, len(word) + 1))
                pieces[min(position, len(pieces) - 1)] = word[:cut] + str(rng.choice(inserts)) + word[cut:]
            else:
                pieces.insert(position, str(rng.choice(inserts)))
        texts.append(" ".join(pieces).capitalize())
    return texts


def test_ids_equal_the_original_on_perturbed_text(tokenizer, uncased_tokens):
    texts = perturbed_texts(uncased_tokens, 2000)
    original = OriginalTokenizer(uncased_tokens)
    ids, row_splits = tokenizer.tokenize_to_ids(texts)
    got = rows(ids, row_splits)
    agree = sum(g == original.ids(t) for g, t in zip(got, texts))
    mismatches = [(texts[i][:80], tokenizer.convert_ids_to_tokens(got[i])[:10], original.tokenize(texts[i])[:10])
                  for i in range(len(texts)) if got[i] != original.ids(texts[i])]
    print(f"perturbed texts with the original's ids: {agree} of {len(texts)}")
    assert agree == len(texts), mismatches[:5]
    # The set exercises what differs from transformers' port: words of 101-200 characters, private use.
    port = OriginalTokenizer(uncased_tokens, max_chars=100, deleted_categories="C")
    assert sum(port.ids(t) != original.ids(t) for t in texts) > 200


def test_private_use_and_long_words_as_the_original(tokenizer):
    assert tokenizer.tokenize("a\ue000b ok") == ["[UNK]", "ok"]          # private use stays, the word is [UNK]
    assert tokenizer.tokenize("a\u200bb ok") == tokenizer.tokenize("ab ok")  # format character deleted
    assert "[UNK]" not in tokenizer.tokenize("x" * 200) and tokenizer.tokenize("x" * 201) == ["[UNK]"]

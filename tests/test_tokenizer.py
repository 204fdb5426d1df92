"""The WordPiece tokenizer gives the original tokenizer's ids; vocab checks; vocab learning."""

import os
import re

import numpy as np
import pytest

from bert_tf.text.normalization import normalize
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.text.vocab_learning import learn_vocab, write_vocab
from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary, read_vocab_file
from helpers import run_cli

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(uncased_vocab, do_lower_case=True)


def rows(ids, row_splits):
    return [ids[a:b].tolist() for a, b in zip(row_splits[:-1], row_splits[1:])]


def test_ids_equal_the_convert_fixture_when_present(tokenizer):
    path = os.path.join(FIXTURES, "minilm_reference.npz")
    if not os.path.exists(path):
        pytest.skip("tests/fixtures/minilm_reference.npz (tools/make_minilm_fixture.py) is not written yet")
    data = np.load(path)
    text_key = next((k for k in ("sentences", "texts", "text") if k in data), None)
    ids_key = next((k for k in ("input_ids", "ids", "token_ids") if k in data), None)
    assert text_key and ids_key, f"unexpected fixture layout: {sorted(data)}"
    sentences = [str(s) for s in data[text_key]]
    if "row_splits" in data:
        reference = rows(data[ids_key], data["row_splits"])
    else:
        mask = data["attention_mask"] if "attention_mask" in data else data[ids_key] != 0
        reference = [[int(t) for t, m in zip(row, row_mask) if m] for row, row_mask in zip(data[ids_key], mask)]
    ids, row_splits = tokenizer.tokenize_to_ids(sentences)
    for sentence, got, want in zip(sentences, rows(ids, row_splits), reference):
        if want and want[0] == tokenizer.vocabulary.cls_id:
            want = want[1:-1]  # [CLS] ... [SEP] around one sentence
        assert got[:len(want)] == want, sentence


def test_the_original_normalization_not_tensorflow_texts():
    # Control characters are deleted (words join), compatibility characters and "ß" are kept, CJK is spaced.
    text = "Con\x00trol\u200b Straße ﬁ ＡＢ 中文 Café\u00a0x\u2028y"
    assert normalize(text) == (
        "control straße ﬁ ａｂ  中  文  cafe x y")
    assert normalize("Café ÉTÉ", do_lower_case=False) == "Café ÉTÉ"


def test_cased_tokenizer_keeps_case_and_accents(uncased_vocab):
    cased = FullTokenizer(uncased_vocab, do_lower_case=False)
    # The uncased vocab has no capitals: they become [UNK]; accents are not stripped either.
    assert cased.tokenize("The café") == ["[UNK]", "[UNK]"]
    assert FullTokenizer(uncased_vocab).tokenize("The café") == ["the", "cafe"]


def test_words_longer_than_200_characters_are_unknown(tokenizer):
    # The original's max_input_chars_per_word is 200 (transformers' port has 100).
    two_hundred = tokenizer.tokenize("a" * 200 + " b")
    assert "[UNK]" not in two_hundred and two_hundred[-1] == "b" and len(two_hundred) > 2
    assert "[UNK]" not in tokenizer.tokenize("a" * 150)
    assert tokenizer.tokenize("a" * 201 + " b") == ["[UNK]", "b"]
    assert tokenizer.tokenize("é" * 201 + ", ok") == ["[UNK]", ",", "ok"]
    assert tokenizer.tokenize("x" * 250 + "." + "y" * 3) == ["[UNK]", ".", "y", "##y", "##y"]


def test_tokenize_to_ids_batches_and_empty_texts(tokenizer):
    ids, row_splits = tokenizer.tokenize_to_ids(["Hello world.", "", "\x00", "Hi"])
    assert ids.dtype == np.int32 and row_splits.tolist() == [0, 3, 3, 3, 4]
    assert ids.tolist() == [7592, 2088, 1012, 7632]
    assert tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"]) == [101, 102, 103, 0, 100]


@pytest.mark.parametrize("missing", SPECIAL_TOKENS)
def test_pre_training_refuses_a_vocab_without_a_special_token(tmp_path, missing):
    tokens = [t for t in SPECIAL_TOKENS if t != missing] + ["the", "cat"]
    if missing == "[PAD]":
        tokens = ["a"] + tokens
    path = tmp_path / "vocab.txt"
    write_vocab(tokens, path)
    with pytest.raises(ValueError, match=re.escape(f"lacks the special token(s) ['{missing}']")) as error:
        Vocabulary.from_file(path).require(SPECIAL_TOKENS, "pre-training data", pad_first=True)
    assert str(path) in str(error.value) and "bert-vocab" in str(error.value)
    if missing != "[UNK]":  # tokenizing needs only [UNK], as the original
        assert FullTokenizer(str(path)).tokenize("the cat") == ["the", "cat"]


def test_vocab_problems_are_named(tmp_path):
    with pytest.raises(ValueError, match="at id 0, not \\[PAD\\]"):
        Vocabulary(["[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]"]).require(pad_first=True)
    with pytest.raises(ValueError, match="lists the token 'cat' twice"):
        Vocabulary(list(SPECIAL_TOKENS) + ["cat", "cat"])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_vocab_file(tmp_path / "nope.txt")


def test_vocab_files_are_read_like_the_original_and_written_whole(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\r\n [UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    assert read_vocab_file(path) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the"]
    write_vocab(["[PAD]", "a"], path)
    assert read_vocab_file(path) == ["[PAD]", "a"] and os.listdir(tmp_path) == ["vocab.txt"]


def test_learned_vocab_has_the_specials_first_and_tokenizes_its_text(bible_csv):
    sentences = ["The Lord is my shepherd; I shall lack nothing.", "He makes me lie down in green pastures.",
                 "He leads me beside still waters.", "He restores my soul."] * 30
    tokens = learn_vocab(sentences, vocab_size=120).tokens
    assert tokens[:5] == list(SPECIAL_TOKENS)
    assert 40 < len(tokens) <= 120 and len(set(tokens)) == len(tokens)
    learned = FullTokenizer(tokens)
    ids, _ = learned.tokenize_to_ids(sentences[:4])
    assert learned.unk_id not in ids.tolist()
    assert learned.tokenize("He restores my soul.")[-1] == "."


def test_bert_vocab_cli(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The Lord is my shepherd.\nHe restores my soul.\n\nJesus wept.\n" * 50, encoding="utf-8")
    output = tmp_path / "vocab.txt"
    done = run_cli("vocab", f"--input_file={corpus}", "--vocab_size=60", f"--output_file={output}")
    assert done.returncode == 0, done.stderr[-2000:]
    tokens = read_vocab_file(output)
    assert tokens[:5] == list(SPECIAL_TOKENS) and "shepherd" in tokens
    assert "wrote" in done.stdout
    bad = run_cli("vocab", f"--input_file={tmp_path}/missing*.txt", f"--output_file={output}")
    assert bad.returncode == 2 and "matches no file" in bad.stderr.strip().splitlines()[-1]


def test_bert_vocab_shows_progress_and_warns_when_it_learns_far_fewer_tokens_than_asked(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The Lord is my shepherd.\nHe restores my soul.\n\nJesus wept.\n" * 50, encoding="utf-8")
    output = tmp_path / "vocab.txt"
    few = run_cli("vocab", f"--input_file={corpus}", "--vocab_size=8000", f"--output_file={output}")
    assert few.returncode == 0, few.stderr[-2000:]
    learned = len(read_vocab_file(output))
    assert learned < 100
    # 149 sentences: the 100th is held out for the report.
    assert "Counted 11 distinct words in 149 sentences" in few.stderr and f"Learned {learned} tokens in" in few.stderr
    assert few.stderr.strip().splitlines()[-1].startswith(
        f"bert-vocab: warning: learned only {learned} tokens of the 8000 asked for: the text has too few distinct "
        f"words")
    enough = run_cli("vocab", f"--input_file={corpus}", f"--vocab_size={learned}", f"--output_file={output}")
    assert enough.returncode == 0 and "warning" not in enough.stderr, enough.stderr[-2000:]

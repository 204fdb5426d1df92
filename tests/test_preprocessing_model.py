"""The tensorflow-text preprocessing SavedModel: the original tokenizer's ids and [CLS] A [SEP] B [SEP] packing,
from a folder moved after export (the vocab travels as an asset)."""

import csv
import gzip
import itertools
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.finetuning.features import encode_texts, truncate_pair
from bert_tf.serving import export_preprocessing
from bert_tf.serving.preprocessing_module import BertPackInputs, Tokenize
from bert_tf.text.normalization import normalize, split_words
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.text.tokenizer_settings import TokenizerSettings
from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

SEQ_LENGTH = 32
TRICKY = ["Café\u00a0Straße\x00s 中文 ﬁne", "a\x00b c\u200bd\ttab\r\nline", "İstanbul ǅ Ⅻ naïve résumé",
          "Hello, World! I'm here... (really) -- yes?", "日本語テキスト and ＦＵＬＬ width", "\ufffdodd\u2028sep",
          # Words over the original's 100 characters become [UNK], however many bytes they take.
          "x" * 100 + " ok " + "y" * 101, "é" * 100 + " " + "é" * 101 + " " + "z" * 500]
# Text in other scripts, each with marks that accent stripping drops (and Hangul, which decomposes into letters).
LANGUAGES = ["Für Straße können MÖCHTE über", "Tiếng Việt có dấu", "パンダがいる。ビールを飲む", "हिन्दी भाषा",
             "Мой файл и ЙОД", "한국어 텍스트", "Ελληνικά ΆΝΘΡΩΠΟΣ", "été déjà vu"]
SETTING_PAIRS = [TokenizerSettings.of(lower, strip) for lower in (True, False) for strip in (True, False)]


@pytest.fixture(scope="module")
def verses(bible_csv):
    with gzip.open(bible_csv, "rt", encoding="utf-8") as f:
        rows = list(itertools.islice(csv.reader(f), 1, 40001, 100))
    return [re.sub(r"\{[^{}]*\}", "", row[4]) for row in rows]


@pytest.fixture(scope="module")
def preprocessing(tmp_path_factory, uncased_vocab):
    """Exported, then moved to another folder and the original removed: loading must not need the old paths."""
    root = tmp_path_factory.mktemp("preprocessing")
    export_preprocessing(str(root / "first" / "1"), uncased_vocab, TokenizerSettings.of(do_lower_case=True),
                         seq_length=SEQ_LENGTH, max_seq_length=64)
    shutil.move(str(root / "first" / "1"), str(root / "moved"))
    shutil.rmtree(root / "first")
    return tf.saved_model.load(str(root / "moved"))


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(uncased_vocab, do_lower_case=True)


def test_tokenize_gives_the_original_tokenizer_ids(preprocessing, tokenizer, verses):
    texts = verses + TRICKY
    got = preprocessing.tokenize(tf.constant(texts))
    assert got.shape.rank == 3  # [batch, words, word pieces], the TF Hub API
    ids, splits = tokenizer.tokenize_to_ids(texts)
    want = [ids[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]
    assert got.merge_dims(1, 2).to_list() == want
    assert sum(len(row) for row in want) > 9_000


def test_signatures_pack_like_the_original_run_classifier(preprocessing, tokenizer, verses):
    """One segment (serving_default) and pairs (text_pair), many of them longer than seq_length."""
    single = preprocessing.signatures["serving_default"](text=tf.constant(verses))
    want = encode_texts(tokenizer, verses, None, SEQ_LENGTH)
    for name in want:
        np.testing.assert_array_equal(single[name].numpy(), want[name])
    texts_a, texts_b = verses[: len(verses) // 2], verses[len(verses) // 2:][: len(verses) // 2]
    pairs = preprocessing.signatures["text_pair"](text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
    want = encode_texts(tokenizer, texts_a, texts_b, SEQ_LENGTH)
    for name in want:
        np.testing.assert_array_equal(pairs[name].numpy(), want[name])
    assert np.mean(want["input_mask"][:, -1]) > 0.3  # truncation was exercised
    assert set(np.unique(want["input_type_ids"])) == {0, 1}


def test_bert_pack_inputs_takes_any_seq_length_up_to_the_model_limit(preprocessing):
    tokens = preprocessing.tokenize(tf.constant(["hello there world", "yes"]))
    packed = preprocessing.bert_pack_inputs([tokens, tokens], tf.constant(6))
    assert packed["input_word_ids"].numpy().tolist() == [[101, 7592, 2045, 102, 7592, 102],
                                                         [101, 2748, 102, 2748, 102, 0]]
    assert packed["input_type_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 0]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings=64"):
        preprocessing.bert_pack_inputs([tokens], tf.constant(65))


def test_three_segments_fail_naming_the_limit_of_two(preprocessing):
    """The TF Hub API packs one or two segments; three (of either rank) fail with that said, not with the loader's
    "Could not find matching concrete function"."""
    tokens = preprocessing.tokenize(tf.constant(["hello there world", "yes"]))
    for segments in ([tokens] * 3, [tokens.merge_dims(-2, -1), tokens, tokens]):
        with pytest.raises(tf.errors.InvalidArgumentError, match="bert_pack_inputs takes one or two segments .* "
                                                                 "got 3: join the extra texts"):
            preprocessing.bert_pack_inputs(segments, seq_length=16)


def test_truncation_is_the_original_truncate_seq_pair():
    """Every pair of lengths up to 12 and budgets up to 20: bert_pack_inputs keeps what the original's loop keeps."""
    lengths = [(a, b) for a in range(13) for b in range(13)]
    segments = [tf.ragged.range([a for a, _ in lengths]) + 1000, tf.ragged.range([b for _, b in lengths]) + 2000]
    pack = BertPackInputs(cls_id=1, sep_id=2, max_seq_length=64)
    for budget in range(21):
        ids = pack.__call__(segments, budget + 3)["input_word_ids"].numpy()
        for i, (a, b) in enumerate(lengths):
            tokens_a, tokens_b = list(range(1000, 1000 + a)), list(range(2000, 2000 + b))
            truncate_pair(tokens_a, tokens_b, budget)
            want = [1] + tokens_a + [2] + tokens_b + [2]
            assert ids[i].tolist() == want + [0] * (budget + 3 - len(want)), (a, b, budget)


def test_vocab_without_special_tokens_is_refused(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\nhello\n")
    with pytest.raises(ValueError, match=r"lacks the special token\(s\) \['\[CLS\]', '\[SEP\]', '\[MASK\]'\]"):
        export_preprocessing(str(tmp_path / "out"), str(vocab))


@pytest.mark.parametrize("settings", SETTING_PAIRS, ids=lambda s: s.describe())
def test_each_pair_of_settings_gives_the_python_tokenizer_ids(tmp_path, settings):
    """Lower-casing and accent stripping, each on or off: the preprocessing model's `tokenize` (its in-graph
    normalization, traced as the export traces it; the saved model's settings are checked by the export tests)
    gives the ids of `FullTokenizer` with the same settings, on a vocab holding every word of the texts under this
    pair (so a difference in case or marks shows as another id, not as [UNK] on both sides)."""
    texts = TRICKY + LANGUAGES
    words = sorted({word for text in texts for word in split_words(normalize(text, settings.do_lower_case,
                                                                             settings.strip_accents))
                    if len(word) <= 50})  # the over-long words stay [UNK] on both sides
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"{token}\n" for token in SPECIAL_TOKENS + tuple(words)), encoding="utf-8")
    tokenize = Tokenize(tf.saved_model.Asset(str(vocab)), Vocabulary.from_file(str(vocab)), settings)
    got = tokenize.__call__(tf.constant(texts)).merge_dims(1, 2)
    ids, splits = FullTokenizer(str(vocab), settings.do_lower_case, settings.strip_accents).tokenize_to_ids(texts)
    want = [ids[splits[i]:splits[i + 1]].tolist() for i in range(len(texts))]
    assert got.to_list() == want
    unknown = sum(row.count(1) for row in want[len(TRICKY):])
    assert unknown == 0, unknown  # every word of the other scripts is in the vocab under its own settings

"""bert-vocab --extend: a released vocab with a domain's words in its [unused*] rows (or appended), every other line
kept; the rows an extended vocab adds, read back for initialising them from their old pieces."""

import itertools

import pytest

from bert_tf.errors import InputError
from bert_tf.text.bible import read_bible_documents
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.text.vocab_extension import (
    UNUSED_TOKEN,
    changed_words,
    count_words,
    extend_vocab,
    new_rows,
    tokens_per_word,
    word_pieces,
)
from bert_tf.text.vocabulary import read_vocab_file
from helpers import run_cli

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

BASE = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused2]", "[unused3]", "beg",
        "##at", "##s", "a", "je", "##ho", "##sh", "sow", "##ed", "so", "##wed"]


def test_words_fill_unused_rows_after_the_kept_ones_by_score_and_the_size_stays():
    counts = {"begat": 10, "jehosh": 4, "a": 100, "sowed": 3, "begats": 1}
    extension = extend_vocab(BASE, counts, keep_unused=1, min_frequency=2)
    # Scores: begat 10 x 1 = 10, jehosh 4 x 2 = 8, sowed 3 x 1 = 3; "a" is one piece, "begats" too rare.
    assert [(t.token, t.row, t.score) for t in extension.added] == [("begat", 2, 10), ("jehosh", 7, 8),
                                                                     ("sowed", 8, 3)]
    assert len(extension.tokens) == len(BASE)
    assert [(i, t) for i, t in enumerate(extension.tokens) if t != BASE[i]] == [(2, "begat"), (7, "jehosh"),
                                                                                (8, "sowed")]
    assert extension.free_unused == (1,)


def test_max_new_tokens_counts_all_new_tokens_and_appends_beyond_the_free_rows():
    counts = {"begat": 10, "jehosh": 4, "sowed": 3}
    grown = extend_vocab(BASE, counts, keep_unused=3, max_new_tokens=3, min_frequency=2)
    assert [(t.token, t.row, t.appended) for t in grown.added] == [("begat", 8, False), ("jehosh", 20, True),
                                                                   ("sowed", 21, True)]
    assert grown.tokens[:20] == tuple(BASE[:8] + ["begat"] + BASE[9:])
    fewer = extend_vocab(BASE, counts, keep_unused=0, max_new_tokens=1, min_frequency=2)
    assert [t.token for t in fewer.added] == ["begat"] and fewer.free_unused == (2, 7, 8)


def test_a_new_token_changes_only_the_words_it_begins():
    extension = extend_vocab(BASE, {"sow": 9}, keep_unused=0, min_frequency=1)
    assert [t.token for t in extension.added] == []  # "sow" is one piece already
    extension = extend_vocab(BASE, {"sowed": 9}, keep_unused=0, min_frequency=1)
    old, new = FullTokenizer(BASE, False), FullTokenizer(list(extension.tokens), False)
    changes = changed_words(old, new, ["sowed", "sow", "sowedsow", "begat", "so"])
    assert changes == {"sowed": (("sow", "##ed"), ("sowed",))}
    # "sowedsow" has no segmentation under either vocab ([UNK]), so it does not change.


def test_extend_vocab_rejects_negative_counts():
    with pytest.raises(InputError, match="keep_unused=-1"):
        extend_vocab(BASE, {}, keep_unused=-1)
    with pytest.raises(InputError, match="max_new_tokens=-2"):
        extend_vocab(BASE, {}, max_new_tokens=-2)


def test_new_rows_are_the_filled_and_appended_words_with_their_old_pieces():
    extended = list(BASE)
    extended[2], extended[7] = "begat", "[MY_TOKEN]"
    extended += ["jehosh"]
    assert new_rows(BASE, extended) == {2: [9, 10], 20: [13, 14, 15]}  # [MY_TOKEN] keeps its row
    assert new_rows(BASE, BASE) == {}
    with pytest.raises(InputError, match=r"line 10 is 'begat' where the checkpoint's .* has 'beg'"):
        new_rows(BASE, BASE[:9] + ["begat"] + BASE[10:])
    with pytest.raises(InputError, match="fewer than the 20"):
        new_rows(BASE, BASE[:-1])


@pytest.fixture(scope="module")
def bible_words():
    documents = list(read_bible_documents(CorpusCounts()))
    train = count_words(s for i, d in enumerate(documents) if i % 10 for s in d)
    heldout = count_words(s for i, d in enumerate(documents) if i % 10 == 0 for s in d)
    return train, heldout


def test_the_bible_fills_the_released_vocab_and_shortens_held_out_text(uncased_vocab, bible_words):
    train, heldout = bible_words
    base = read_vocab_file(uncased_vocab)
    extension = extend_vocab(base, train)
    unused = [i for i, t in enumerate(base) if UNUSED_TOKEN.fullmatch(t)]
    assert len(base) == len(extension.tokens) == 30522 and len(unused) == 994
    # Every token that is not a filled [unused] row keeps its line; the first 100 [unused] rows stay free.
    assert all(new == old for new, old in zip(extension.tokens, base) if not UNUSED_TOKEN.fullmatch(old))
    assert extension.free_unused == tuple(unused[:100]) and len(extension.added) == 894
    added = {t.token: t for t in extension.added}
    assert added["jehoshaphat"].old_pieces == ("je", "##hosh", "##ap", "##hat")
    assert added["yahweh"].row == unused[100]  # the highest score takes the first free row
    # Each added token is what the repo's tokenizer emits for its word on raw text, normalization included.
    tokenizer = FullTokenizer(list(extension.tokens), do_lower_case=True)
    assert tokenizer.tokenize("Jehoshaphat REJOICE Jéhoshaphat's") == ["jehoshaphat", "rejoice", "jehoshaphat",
                                                                        "'", "s"]
    emitted = set(itertools.chain.from_iterable(word_pieces(FullTokenizer(list(extension.tokens), False), train)))
    assert set(added) <= emitted
    before = tokens_per_word(FullTokenizer(base, False), heldout)
    after = tokens_per_word(FullTokenizer(list(extension.tokens), False), heldout)
    assert before == pytest.approx(1.0989, abs=1e-4) and after == pytest.approx(1.0252, abs=1e-4)


def test_cli_extend_writes_the_vocab_and_reports_what_changed(tmp_path, uncased_vocab):
    corpus = tmp_path / "domain.txt"
    corpus.write_text("Jehoshaphat begat Jehoram.\nJehoshaphat reigned.\n\nJehoram begat Ahaziah. Begat!\n")
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("Jehoshaphat begat sons.\n")
    output = tmp_path / "vocab.txt"
    done = run_cli("vocab", f"--extend={uncased_vocab}", f"--input_file={corpus}", f"--heldout_file={heldout}",
                   f"--output_file={output}", "--min_frequency=2", "--keep_unused=993", "--max_new_tokens=3")
    assert done.returncode == 0, done.stderr[-2000:]
    base, tokens = read_vocab_file(uncased_vocab), read_vocab_file(output)
    # begat (3 x 1), jehoshaphat (2 x 3), jehoram (2 x 2): one fills the one free [unused] row, two are appended.
    assert tokens[:998] == base[:998] and tokens[999:30522] == base[999:]
    assert (tokens[998], tokens[30522:]) == ("jehoshaphat", ["jehoram", "begat"])
    out = done.stdout
    assert "3 words of the input" in out and "1 into [unused*] rows and 2 appended" in out
    assert "998\tjehoshaphat\t2\t6\tje ##hosh ##ap ##hat" in out
    assert "emits on the input: 3 of 3" in out
    # Held out: jehoshaphat 4 -> 1, begat 2 -> 1, sons 1: 7 tokens / 3 words before, 3 / 3 after.
    assert f"tokens per word on held-out text {heldout}: 2.3333 before, 1.0000 after" in out

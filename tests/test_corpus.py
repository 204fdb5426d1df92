"""Corpus readers -> documents: the original format, raw text, the embedded Bible, a local TFDS dataset."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from bert_tf.instances.shard import TokenizedShard
from bert_tf.text.bible import read_bible_documents
from bert_tf.text.corpus import CorpusCounts, read_documents, read_sentence_documents
from bert_tf.text.file_patterns import expand_file_patterns
from bert_tf.text.sentences import split_sentences
from bert_tf.text.tfds_corpus import read_tfds_documents
from bert_tf.text.tokenizer import FullTokenizer

TFDS_TEXTS = ["In the beginning was the Word. The Word was with God.", "Jesus wept.",
              "Blessed are the poor in spirit. Theirs is the Kingdom of Heaven! Blessed are those who mourn."]


class BertTfTinyTexts(tfds.core.GeneratorBasedBuilder):
    """Three documents, prepared locally: what a TFDS text corpus looks like to the reader."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict(
            {"text": tfds.features.Text(), "title": tfds.features.Text()}))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        for i, text in enumerate(TFDS_TEXTS):
            yield i, {"text": text, "title": f"document {i}"}


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(uncased_vocab)


def test_original_format_blank_lines_end_documents_and_runs_give_empty_ones(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"First sentence.\nSecond one.\n\n\n   \nThird.\r\nlast of a")
    (tmp_path / "b.txt").write_bytes(b"continues in b\n\nFourth \xff\xfebytes.\n")
    counts = CorpusCounts()
    files = expand_file_patterns(f"{tmp_path}/a.txt,{tmp_path}/b*.txt")
    documents = list(read_sentence_documents(files, counts))
    # As the original: a whitespace-only line is blank; a document runs on into the next file.
    assert documents == [["First sentence.", "Second one."], [], [], ["Third.", "last of a", "continues in b"],
                         ["Fourth bytes."]]
    assert counts.files == 2 and counts.lines == 10 and counts.undecodable_lines == 1


def test_empty_sentences_and_documents_are_dropped_and_counted(tmp_path, tokenizer):
    counts = CorpusCounts()
    documents = [["Jesus wept."], [], ["\x00\x01", "   ", "Amen."], ["\u200b"], ["One.", "Two.", "Three."]]
    shard = TokenizedShard.from_documents(0, documents, tokenizer, counts)
    assert shard.document_splits.tolist() == [0, 1, 2, 5]
    assert np.diff(shard.sentence_splits).tolist() == [3, 3, 2, 2, 2]  # jesus wept . | am ##en . | one . | ...
    assert (counts.documents, counts.empty_documents, counts.one_sentence_documents) == (3, 2, 2)
    assert (counts.sentences, counts.empty_sentences, counts.tokens) == (5, 3, 12)


def test_input_file_globs_keep_the_given_order_and_missing_ones_fail(tmp_path):
    for name in ("b-1.txt", "b-0.txt", "a.txt"):
        (tmp_path / name).write_text("x\n")
    assert [p.rsplit("/", 1)[1] for p in expand_file_patterns(f"{tmp_path}/b-*.txt, {tmp_path}/a.txt")] == [
        "b-0.txt", "b-1.txt", "a.txt"]
    with pytest.raises(FileNotFoundError, match="matches no file"):
        expand_file_patterns(f"{tmp_path}/a.txt,{tmp_path}/nothing-*.txt")
    with pytest.raises(ValueError, match="names no file"):
        expand_file_patterns(" , ")


def test_raw_text_files_are_documents_split_into_sentences(tmp_path):
    (tmp_path / "one.txt").write_text("Dr. Watson came at 9.30 today. He was late.\n\nChapter Two\n\nIt rained\n"
                                      "all day.")
    (tmp_path / "two.txt").write_text("Short.")
    counts = CorpusCounts()
    documents = list(read_documents(f"{tmp_path}/*.txt", "text", counts))
    # A blank line ends a sentence; a single newline is a hard wrap.
    assert documents == [["Dr. Watson came at 9.30 today.", "He was late.", "Chapter Two", "It rained all day."],
                         ["Short."]]
    with pytest.raises(ValueError, match="input_format='json' is unknown"):
        read_documents(f"{tmp_path}/*.txt", "json", counts)


def test_sentence_rule():
    assert split_sentences('Mr. Smith paid $3.50. He said: "Hello!" Then he left.\n\nChapter 2') == [
        "Mr. Smith paid $3.50.", 'He said: "Hello!"', "Then he left.", "Chapter 2"]
    assert split_sentences("J. R. R. Tolkien wrote it. The U.S.A. is big. Is it? (Yes.) 3 apples... e.g. this.") == [
        "J. R. R. Tolkien wrote it.", "The U.S.A. is big.", "Is it?", "(Yes.)", "3 apples... e.g. this."]
    assert split_sentences("  \n\n ") == []


def test_sentence_ends_of_other_scripts():
    # Chinese and Japanese: no space after 。！？, closing quotes and brackets stay with their sentence.
    assert split_sentences("他说：“你好！”然后走了。雨が降った。傘がない！３月に来た．次") == [
        "他说：“你好！”", "然后走了。", "雨が降った。", "傘がない！", "３月に来た．", "次"]
    # Devanagari danda, Arabic question mark and full stop, Urdu full stop, Ethiopic full stop.
    assert split_sentences("यह मेरी किताब है। वह कहाँ है? ठीक है।") == ["यह मेरी किताब है।", "वह कहाँ है?", "ठीक है।"]
    assert split_sentences("هل أنت بخير؟ نعم. شكرا") == ["هل أنت بخير؟", "نعم.", "شكرا"]
    assert split_sentences("یہ کتاب ہے۔ وہ قلم ہے۔") == ["یہ کتاب ہے۔", "وہ قلم ہے۔"]
    assert split_sentences("ሰላም ነው። እንዴት ነህ?") == ["ሰላም ነው።", "እንዴት ነህ?"]
    # A script with case keeps the English rule: a lower-case next word does not start a sentence.
    assert split_sentences("Он пришёл. Она ушла. и всё.") == ["Он пришёл.", "Она ушла. и всё."]


def test_bible_is_a_document_per_chapter_without_footnotes_or_title_markers(bible_csv):
    counts = CorpusCounts()
    documents = list(read_bible_documents(counts, bible_csv))
    assert len(documents) == 1189 and counts.lines == 31102 and counts.undecodable_lines == 0
    assert documents[0][0] == "In the beginning God created the heavens and the earth."
    assert documents[-1][-2:] == ["The grace of the Lord Jesus Christ be with all the saints.", "Amen."]
    text = [s for d in documents for s in d]
    assert len(text) == 35010 and not any("{" in s or "}" in s or "&gt;" in s for s in text)
    assert documents[480][0] == "Yahweh, how my adversaries have increased!"  # Psalm 3, its title cut
    assert 3.9e6 < sum(len(s) for s in text) < 4.1e6


def test_tfds_dataset_prepared_in_a_local_data_dir(tmp_path):
    BertTfTinyTexts(data_dir=str(tmp_path)).download_and_prepare()
    counts = CorpusCounts()
    documents = list(read_tfds_documents("bert_tf_tiny_texts", str(tmp_path), counts))
    assert sorted(documents) == sorted([["In the beginning was the Word.", "The Word was with God."], ["Jesus wept."],
                                        ["Blessed are the poor in spirit.", "Theirs is the Kingdom of Heaven!",
                                         "Blessed are those who mourn."]])
    assert counts.lines == 3
    with pytest.raises(KeyError, match="no feature 'body'.*'text', 'title'"):
        list(read_tfds_documents("bert_tf_tiny_texts", str(tmp_path), counts, text_key="body"))
    with pytest.raises(FileNotFoundError, match="not prepared in data_dir"):
        list(read_tfds_documents("bert_tf_tiny_texts", str(tmp_path / "empty"), counts))
    with pytest.raises(FileNotFoundError, match="neither prepared"):
        list(read_tfds_documents("no_such_dataset_here", str(tmp_path), counts))

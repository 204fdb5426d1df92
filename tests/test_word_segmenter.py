"""Chinese whole-word masking with a word segmenter (jieba, the `chinese` extra): the masking groups are the
segmenter's words and the ids the characters' ids, a line the segmenter and the tokenizer disagree on falls back to
"##" groups, records written without a segmenter are those of before, and `word_starts` goes through the records'
schema, checker, dynamic masking and packed rows."""

import hashlib

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.inputs.dynamic_masking import DynamicMasker
from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import pretraining_dataset
from bert_tf.instances.options import InstanceOptions
from bert_tf.instances.pipeline import create_pretraining_data
from bert_tf.instances.shard import TokenizedShard
from bert_tf.records.checker import check_record_files
from bert_tf.records.inspection import structure_problems
from bert_tf.records.reader import concatenate, read_records
from bert_tf.records.schema import read_schema
from bert_tf.text.bible import read_bible_documents
from bert_tf.text.corpus import CorpusCounts
from bert_tf.text.sentences import split_sentences
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.text.word_segmenter import WordSegmenter
from chinese_text import MADMAN, SPECIALS
from helpers import run_cli

pytest.importorskip("jieba", reason="jieba is the optional extra bert_tf[chinese] (make setup installs it)")

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


@pytest.fixture(scope="module")
def segmenter():
    return WordSegmenter("jieba")


@pytest.fixture(scope="module")
def chinese_tokenizer():
    """A vocab of the text's characters (each its own token, as the tokenizer splits ideographs) and a few pieces."""
    characters = sorted({c for c in MADMAN if not c.isspace()})
    return FullTokenizer(SPECIALS + characters + ["cafe", "ca", "##f", "e", "un", "##want", "##ed"], do_lower_case=True)


def documents():
    return [split_sentences(paragraph) for paragraph in MADMAN.split("\n\n")]


def groups_of(starts, ids, special_ids):
    """Masking groups (lists of positions) of one sequence from its word starts: a group runs from a start over the
    tokens after it that start none; specials end it."""
    groups = []
    for i, (start, token) in enumerate(zip(starts, ids)):
        if token in special_ids:
            continue
        if start or not groups or groups[-1][-1] != i - 1:
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def test_groups_are_the_segmenters_words_and_ids_the_characters(segmenter, chinese_tokenizer):
    sentences = [s for document in documents() for s in document]
    assert len(sentences) == 10 and sentences[3] == "不然，那赵家的狗，何以看我两眼呢？"  # 。？ end sentences
    ids, row_splits, starts, fallbacks = segmenter.word_starts(sentences, chinese_tokenizer)
    assert fallbacks == 0
    plain_ids, plain_splits = chinese_tokenizer.tokenize_to_ids(sentences)
    np.testing.assert_array_equal(ids, plain_ids)  # the ids are the tokenizer's own: the characters'
    np.testing.assert_array_equal(row_splits, plain_splits)
    multi_character = 0
    for s, sentence in enumerate(sentences):
        tokens = chinese_tokenizer.convert_ids_to_tokens(ids[row_splits[s]:row_splits[s + 1]])
        assert tokens == list(sentence)  # one token per character, never a "##" id
        line_starts = starts[row_splits[s]:row_splits[s + 1]]
        groups = ["".join(tokens[g[0]:g[-1] + 1]) for g in groups_of(line_starts, tokens, ())]
        assert groups == segmenter.words(sentence)
        multi_character += sum(len(g) > 1 for g in groups)
    assert multi_character >= 40  # 三十多年, 精神, 分外, 爽快, ...: words of several characters were grouped


def test_the_command_on_raw_chinese_text(chinese_tokenizer, tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(chinese_tokenizer.vocab) + "\n", encoding="utf-8")
    (tmp_path / "madman.txt").write_text(MADMAN, encoding="utf-8")
    output = tmp_path / "train.tfrecord"
    process = run_cli("create_pretraining_data", f"--input_file={tmp_path / 'madman.txt'}", "--input_format=text",
                      f"--output_file={output}", f"--vocab_file={tmp_path / 'vocab.txt'}", "--do_whole_word_mask",
                      "--word_segmenter=jieba", "--max_seq_length=32", "--max_predictions_per_seq=6",
                      "--dupe_factor=2", "--num_workers=0")
    assert process.returncode == 0, process.stderr[-2000:]
    # The text's 10 sentences (split at 。 and ？), each segmented, none fell back.
    assert "word segmenter: 0 of 10 sentences (0.00%) fell back to token masking" in process.stdout
    assert read_schema([str(output)]).optional_features == ("word_starts",)


def test_a_line_the_segmenter_and_tokenizer_disagree_on_falls_back_and_is_counted(segmenter, chinese_tokenizer):
    # jieba cuts "Café" into "Caf" | "é"; the tokenizer lower-cases and strips the accent: one word, "cafe".
    assert segmenter.words("Café 很好") == ["Caf", "é", " ", "很", "好"]
    counts = CorpusCounts()
    shard = TokenizedShard.from_documents(0, [["Café 很好", "unwanted 月光"]], chinese_tokenizer, counts, segmenter)
    tokens = chinese_tokenizer.convert_ids_to_tokens(shard.token_ids)
    assert tokens == ["cafe", "很", "好", "un", "##want", "##ed", "月", "光"]
    # The first line: the "##" rule (every token starts a group); the second: the segmenter's words.
    assert shard.word_starts.tolist() == [1, 1, 1, 1, 0, 0, 1, 0]
    assert (counts.word_segmented_sentences, counts.word_fallback_sentences) == (2, 1)
    assert "word segmenter: 1 of 2 sentences (50.00%) fell back to token masking" in counts.summary_lines()[-1]


def test_static_masking_masks_a_word_whole_or_not_at_all(segmenter, chinese_tokenizer, tmp_path):
    files = [str(tmp_path / "train.tfrecord")]
    options = InstanceOptions(max_seq_length=32, max_predictions_per_seq=6, masked_lm_prob=0.15, dupe_factor=20,
                              do_whole_word_mask=True, word_segmenter="jieba", random_seed=3)
    summary = create_pretraining_data(iter(documents()), chinese_tokenizer, files, options, num_workers=0,
                                      progress=False)
    records = concatenate(read_records(files))
    assert records["word_starts"].shape == records["input_ids"].shape
    vocab = chinese_tokenizer.vocabulary
    specials = (vocab.pad_id, vocab.cls_id, vocab.sep_id)
    words = {w for sentence in split_sentences(MADMAN) for w in segmenter.words(sentence)}
    whole_words_masked = 0
    for i in range(len(records["input_ids"])):
        count = int(records["masked_lm_weights"][i].sum())
        positions = set(records["masked_lm_positions"][i, :count].tolist())
        original = records["input_ids"][i].copy()
        original[records["masked_lm_positions"][i, :count]] = records["masked_lm_ids"][i, :count]
        separators = np.flatnonzero(original == vocab.sep_id)
        for group in groups_of(records["word_starts"][i], original.tolist(), specials):
            text = "".join(chinese_tokenizer.convert_ids_to_tokens(original[group]))
            # A group is a word; truncation may have cut the front of a segment's first word or the back of its last.
            front_cut = group[0] in {1, separators[0] + 1} and any(w.endswith(text) for w in words)
            back_cut = group[-1] + 1 in separators and any(w.startswith(text) for w in words)
            assert text in words or front_cut or back_cut, (i, text)
            assert set(group) <= positions or not set(group) & positions, (i, group, sorted(positions))
            whole_words_masked += len(group) > 1 and set(group) <= positions
    assert whole_words_masked >= 50
    # bert-inspect-data's structure rules hold, word starts included; a start on a [SEP] breaks one record.
    assert set(structure_problems(records, vocab.cls_id, vocab.sep_id).values()) == {0}
    broken = {**records, "word_starts": records["word_starts"].copy()}
    broken["word_starts"][0, records["input_mask"][0].sum() - 1] = 1
    assert structure_problems(broken, vocab.cls_id, vocab.sep_id)[
        "word_starts not 1 at each segment's start, 0 on [CLS], [SEP], padding"] == 1
    assert summary.counts.word_fallback_sentences == 0 and summary.counts.word_segmented_sentences == 10


# sha256 of the records the pipeline wrote from the first 60 Bible chapters before word segmenters existed (commit
# 998bdcf): records written without a segmenter must stay byte for byte the same.
DIGESTS_BEFORE_WORD_SEGMENTERS = {
    "plain": "52abd153a909e930dfcd969b34c6870641927667bc86e8f377b025b60950e33f",
    "wwm": "dfb9b42c64b53a8c7670349b9ec7ee8048e3f229fa174d5bd409ab17ab2c4270",
    "packed_wwm": "bd8865fddb6d5ab871305223a71e5c62db9b757d809ff01ec7f4f5db38bc718e",
}


def test_records_without_a_segmenter_are_byte_identical_to_before(uncased_vocab, bible_csv, tmp_path):
    chapters = list(read_bible_documents(CorpusCounts(), bible_csv))[:60]
    tokenizer = FullTokenizer(uncased_vocab)
    for name, extra in {"plain": {}, "wwm": {"do_whole_word_mask": True},
                        "packed_wwm": {"do_whole_word_mask": True, "pack": True}}.items():
        files = [str(tmp_path / f"{name}-{i}.tfrecord") for i in range(2)]
        create_pretraining_data(iter(chapters), tokenizer, files,
                                InstanceOptions(dupe_factor=2, max_seq_length=64, max_predictions_per_seq=10,
                                                shard_size_mb=0.01, **extra), num_workers=0, progress=False)
        digest = hashlib.sha256(b"".join(open(f, "rb").read() for f in files)).hexdigest()
        assert digest == DIGESTS_BEFORE_WORD_SEGMENTERS[name], name


def whole_groups_masked(batches, records, vocab):
    """Checks each batch row's masked positions against the groups of its record's word starts; returns how many
    groups of several tokens were masked."""
    specials = (vocab.pad_id, vocab.cls_id, vocab.sep_id)
    masked_words, row = 0, 0
    for batch in batches:
        for b in range(len(batch["input_word_ids"])):
            count = int(batch["masked_lm_weights"][b].numpy().sum())
            positions = set(batch["masked_lm_positions"][b, :count].numpy().tolist())
            assert positions
            for group in groups_of(records["word_starts"][row], records["input_ids"][row].tolist(), specials):
                assert set(group) <= positions or not set(group) & positions, (row, group, sorted(positions))
                masked_words += len(group) > 1 and set(group) <= positions
            row += 1
    assert row == len(records["input_ids"])
    return masked_words


@pytest.mark.parametrize("pack", [False, True], ids=["records", "packed_rows"])
def test_dynamic_masking_keeps_the_words_of_the_records_whole(segmenter, chinese_tokenizer, tmp_path, pack):
    path = str(tmp_path / "train.tfrecord")
    options = InstanceOptions(max_seq_length=32, max_predictions_per_seq=6, dupe_factor=4, do_whole_word_mask=True,
                              word_segmenter="jieba", pack=pack)
    create_pretraining_data(iter(documents()), chinese_tokenizer, [path], options, num_workers=0, progress=False)
    schema = read_schema([path])
    assert schema.optional_features == ("word_starts",) and schema.packed == pack
    vocab = chinese_tokenizer.vocabulary
    check_record_files(path, 32, 6, vocab.size, masks_drawn_again=True, vocab=vocab)
    records = concatenate(read_records([path]))
    # Undo the static masks: the rows' own tokens, against which dynamic masking draws anew.
    for i in range(len(records["input_ids"])):
        count = int(records["masked_lm_weights"][i].sum())
        records["input_ids"][i, records["masked_lm_positions"][i, :count]] = records["masked_lm_ids"][i, :count]
    masker = DynamicMasker(vocab, masked_lm_prob=0.3, do_whole_word_mask=True)
    spec = InputSpec(path, 32, 6, batch_size=8, is_training=False,
                     seed=1, masker=masker, drop_remainder=False, row_layout=schema.row_layout)
    assert whole_groups_masked(pretraining_dataset(spec), records, vocab) >= 10


def test_records_with_and_without_word_starts_mix_and_bad_values_are_refused(chinese_tokenizer, tmp_path):
    with_starts, without = str(tmp_path / "with.tfrecord"), str(tmp_path / "without.tfrecord")
    for path, segmenter_name in ((with_starts, "jieba"), (without, None)):
        options = InstanceOptions(max_seq_length=32, max_predictions_per_seq=6, dupe_factor=1,
                                  do_whole_word_mask=True, word_segmenter=segmenter_name)
        create_pretraining_data(iter(documents()), chinese_tokenizer, [path], options, num_workers=0,
                                progress=False)
    vocab = chinese_tokenizer.vocabulary
    masker = DynamicMasker(vocab, do_whole_word_mask=True)
    spec = InputSpec([without, with_starts], 32, 6, batch_size=4, is_training=False, seed=1, masker=masker)
    assert sum(1 for _ in pretraining_dataset(spec)) > 2
    # A word start of 2 is no flag: the checker names the feature and the fix.
    record = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(with_starts))).numpy())
    record.features.feature["word_starts"].int64_list.value[1] = 2
    bad = str(tmp_path / "bad.tfrecord")
    with tf.io.TFRecordWriter(bad) as writer:
        writer.write(record.SerializeToString())
    with pytest.raises(InputError, match="holds word_starts value 2: word starts are 0 or 1"):
        check_record_files(bad, 32, 6, vocab.size)


def test_a_word_segmenter_needs_whole_word_masking():
    with pytest.raises(InputError, match="word_segmenter.*add --do_whole_word_mask"):
        InstanceOptions(word_segmenter="jieba")
    assert InstanceOptions(word_segmenter="jieba", do_whole_word_mask=True).word_segmenter == "jieba"

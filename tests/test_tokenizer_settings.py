"""Lower-casing and accent stripping as two settings, the settings file bert-vocab writes beside a vocab, bert-vocab's
choice of stripping (the 0.1% rule), and each setting's round trip through every hand-off: records, the model
directory, the three SavedModels, fine-tuning's loader, HF's folder both ways, and `bert-vocab --extend`."""

import json
import shutil
import unicodedata

import pytest
import tensorflow as tf

from bert_tf import BertPretrainer
from bert_tf.cli.finetune import load_encoder
from bert_tf.errors import InputError
from bert_tf.finetuning.recipe import FinetuningRecipe
from bert_tf.model_dir import tokenizer_settings, write_model_dir
from bert_tf.serving.settings_variables import saved_settings
from bert_tf.text.accent_choice import MAX_CHANGED_WORD_SHARE, choose_strip_accents, stripped_word_counts
from bert_tf.text.normalization import loses_mark, normalize
from bert_tf.text.tokenizer import FullTokenizer
from bert_tf.text.tokenizer_settings import TokenizerSettings, settings_path
from bert_tf.text.vocabulary import SPECIAL_TOKENS, read_vocab_file
from bert_tf.text.word_counting import count_text
from helpers import run_cli, tiny_config

# A few sentences per language, each with letters that accent stripping changes (Korean: none that it drops).
LANGUAGES = {
    "German": ["Für die Kinder können wir über die Brücke gehen.", "Möchten Sie Käse oder Äpfel?",
               "Die Straße ist schön, aber die Größe stört."],
    "Vietnamese": ["Tiếng Việt có dấu.", "Tôi muốn học tiếng Việt ở Hà Nội.", "Chúng tôi đã đến đó hôm qua."],
    "Japanese": ["パンダがいる。", "ビールを飲みました。", "東京で地下鉄に乗りました。"],
    "Russian": ["Мой файл здесь.", "Я пойду домой завтра.", "Это новый район города."],
    "Hindi": ["हिन्दी भाषा बहुत सुंदर है।", "मैं किताब पढ़ रहा हूँ।", "यह मेरा घर है।"],
}
KOREAN = ["한국어 텍스트를 읽습니다.", "서울에서 만났어요."]
PAIRS = [TokenizerSettings.of(lower, strip) for lower in (True, False) for strip in (True, False)]


def nfc(text):
    return unicodedata.normalize("NFC", text)


def test_lower_casing_without_stripping_keeps_every_mark():
    """NFC of the normalized text equals NFC of the cleaned-up text lower-cased, in every script; stripping
    without lower-casing keeps the case; the original's flag alone still does both."""
    for text in [s for sentences in LANGUAGES.values() for s in sentences] + KOREAN + ["ÉTÉ e\u0301te\u0301"]:
        cleaned = normalize(text, do_lower_case=False, strip_accents=False)
        assert nfc(normalize(text, do_lower_case=True, strip_accents=False)) == nfc(cleaned.lower())
        stripped = normalize(text, do_lower_case=False, strip_accents=True)
        assert not any(map(loses_mark, stripped)) and stripped.lower() == normalize(text, True, True)
        assert normalize(text) == normalize(text, do_lower_case=True, strip_accents=True)
    assert normalize("Für ÉTÉ", do_lower_case=False, strip_accents=True) == "Fur ETE"
    assert normalize("Für ÉTÉ", do_lower_case=True, strip_accents=False) == "für été"


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_the_default_keeps_the_marks_of_text_that_needs_them(language):
    choice = choose_strip_accents(lower_cased_words(LANGUAGES[language]))
    assert not choice.strip_accents and choice.share > MAX_CHANGED_WORD_SHARE, choice
    assert "keeping accents" in choice.reason()


def test_the_default_strips_english_and_loses_nothing_in_hangul(bible_csv):
    import csv
    import gzip

    with gzip.open(bible_csv, "rt", encoding="utf-8") as f:
        verses = [row[4] for row in csv.reader(f)][1:] + ["The café was naïve."]
    english = choose_strip_accents(lower_cased_words(verses))
    assert english.strip_accents and 0 < english.changed <= MAX_CHANGED_WORD_SHARE * english.words, english
    korean = choose_strip_accents(lower_cased_words(KOREAN))
    assert korean.changed == 0 and korean.words > 0  # decomposed syllables are jamo letters, no mark to drop


def lower_cased_words(sentences):
    return count_text(sentences, TokenizerSettings.of(True, False).normalizer()).words


def test_stripping_the_counted_words_counts_the_text_stripped():
    """bert-vocab decides on the words counted lower-cased, then strips them rather than reading the text again:
    the same counts as the text normalized with stripping, in every script (and a Greek question mark and varia,
    whose decompositions are punctuation)."""
    sentences = ([s for sentences in LANGUAGES.values() for s in sentences] + KOREAN
                 + ["ÉTÉ e\u0301te\u0301 a\u037eb \u1fefx"])
    stripped = count_text(sentences, TokenizerSettings.of(True, True).normalizer()).words
    assert stripped_word_counts(lower_cased_words(sentences)) == stripped


def test_settings_file_round_trip_and_refusals(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[UNK]\nfür\n")
    assert TokenizerSettings.read(str(vocab)) is None
    assert TokenizerSettings.for_vocab(str(vocab)) == TokenizerSettings(True, True)  # the original's default
    settings = TokenizerSettings.of(do_lower_case=True, strip_accents=False)
    assert settings.write_beside(str(vocab)) == str(tmp_path / "vocab.settings.json")
    assert json.loads((tmp_path / "vocab.settings.json").read_text()) == {
        "format_version": 1, "do_lower_case": True, "strip_accents": False}
    assert TokenizerSettings.for_vocab(str(vocab)) == settings
    assert TokenizerSettings.for_vocab(str(vocab), do_lower_case=True, strip_accents=False) == settings
    with pytest.raises(InputError, match=r"^--strip_accents contradicts .*vocab.settings.json, the settings the "
                                         r"vocab was learned with \(do_lower_case=true, strip_accents=false\)"):
        TokenizerSettings.for_vocab(str(vocab), strip_accents=True)
    # HF's null follows lower-casing; a key or a format this version does not know is refused.
    for text, words in [('{"do_lower_case": false, "strip_accents": null}', None),
                        ('{"format_version": 1, "do_lower_case": true, "pre_tokenizer": "x"}', "pre_tokenizer"),
                        ('{"format_version": 7}', "newer than this bert_tf reads"),
                        ('{"do_lower_case": "yes"}', "must be true, false or null"), ("[true]", "not a JSON object"),
                        ("{", "is not JSON")]:
        (tmp_path / "vocab.settings.json").write_text(text)
        if words is None:
            assert TokenizerSettings.read(str(vocab)) == TokenizerSettings(False, False)
        else:
            with pytest.raises(InputError, match=words):
                TokenizerSettings.read(str(vocab))
    assert settings.write_beside("/dev/null") is None  # nothing beside a device


@pytest.mark.slow  # runs the commands: bert-vocab, bert-export, ...
def test_a_resumed_run_given_its_vocab_with_other_settings_is_refused(tmp_path):
    import yaml

    from pretraining_records import one_phase_tiny_recipe

    recipe = one_phase_tiny_recipe(tmp_path, "settings_resume")
    recipe.update(num_train_steps=2, iterations_per_loop=1, num_warmup_steps=1)
    recipe["phases"][0]["num_steps"] = 2
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    flags = [f"--config={tmp_path / 'recipe.yaml'}", f"--model_dir={tmp_path / 'run'}", "--peak_tflops=1"]
    first = run_cli("pretrain", *flags)
    assert first.returncode == 0, first.stderr[-3000:]
    vocab = tmp_path / "other_settings.txt"
    shutil.copyfile(tmp_path / "run" / "vocab.txt", vocab)
    TokenizerSettings.of(do_lower_case=False).write_beside(str(vocab))
    again = run_cli("pretrain", *flags, f"--vocab_file={vocab}")
    assert again.returncode == 2, again.stderr[-3000:]
    assert (f"--vocab_file={vocab} is read with do_lower_case=false, strip_accents=false (its settings file "
            f"{settings_path(str(vocab))}), but {tmp_path / 'run'} was trained with do_lower_case=true, "
            f"strip_accents=true") in again.stderr.splitlines()[-1]


TEXT = ["Für die Kinder können wir über die Brücke gehen.", "Möchten Sie Käse oder Äpfel?",
        "Die Straße ist schön, aber die Größe stört.", "", "Über alles in der Welt.", "Wir möchten Käse kaufen."]


@pytest.fixture(scope="module")
def handed_off(tmp_path_factory):
    """A vocab learned by bert-vocab from German text (its default: lower-cased, accents kept), and a tiny model
    directory of it exported by bert-export."""
    root = tmp_path_factory.mktemp("handoffs")
    (root / "german.txt").write_text("\n".join(TEXT * 30) + "\n", encoding="utf-8")
    learned = run_cli("vocab", f"--input_file={root / 'german.txt'}", "--vocab_size=300",
                      f"--output_file={root / 'vocab.txt'}")
    assert learned.returncode == 0, learned.stderr[-3000:]
    tokens = read_vocab_file(str(root / "vocab.txt"))
    write_model_dir(str(root / "model"), BertPretrainer(tiny_config(vocab_size=len(tokens))), str(root / "vocab.txt"))
    exported = run_cli("export", f"--model_dir={root / 'model'}", f"--output_dir={root / 'exported'}",
                       "--max_seq_length=16")
    assert exported.returncode == 0, exported.stderr[-3000:]
    return {"root": root, "stdout": learned.stdout, "tokens": tokens,
            "settings": TokenizerSettings.of(do_lower_case=True, strip_accents=False)}


@pytest.mark.slow  # runs the commands: bert-vocab, bert-export, ...
def test_bert_vocab_keeps_the_umlauts_and_writes_its_settings(handed_off):
    root, tokens = handed_off["root"], handed_off["tokens"]
    assert "accents: keeping accents: stripping would change" in handed_off["stdout"]
    assert f"wrote its settings (do_lower_case=true, strip_accents=false) to {root / 'vocab.settings.json'}" in (
        handed_off["stdout"])
    assert TokenizerSettings.read(str(root / "vocab.txt")) == handed_off["settings"]
    assert {"für", "über", "können"} <= set(tokens) and "fur" not in tokens


@pytest.mark.slow  # runs the commands: bert-vocab, bert-export, ...
def test_records_use_the_vocab_settings_unless_a_flag_contradicts_them(handed_off, tmp_path):
    root = handed_off["root"]
    args = [f"--input_file={root / 'german.txt'}", f"--vocab_file={root / 'vocab.txt'}", "--max_seq_length=32",
            "--dupe_factor=1", "--num_workers=0"]
    made = run_cli("create_pretraining_data", *args, f"--output_file={tmp_path / 'train.tfrecord'}")
    assert made.returncode == 0, made.stderr[-3000:]
    ids = set()
    for record in tf.data.TFRecordDataset(str(tmp_path / "train.tfrecord")):
        example = tf.train.Example.FromString(record.numpy())
        ids.update(example.features.feature["input_ids"].int64_list.value)
        ids.update(example.features.feature["masked_lm_ids"].int64_list.value)
    assert handed_off["tokens"].index("für") in ids
    refused = run_cli("create_pretraining_data", *args, "--strip_accents", f"--output_file={tmp_path / 'x.tfrecord'}")
    assert refused.returncode == 2 and "--strip_accents contradicts" in refused.stderr.splitlines()[-1]


@pytest.mark.slow  # runs the commands: bert-vocab, bert-export, ...
def test_the_model_dir_and_the_three_saved_models_carry_the_settings(handed_off):
    root, settings, tokens = handed_off["root"], handed_off["settings"], handed_off["tokens"]
    assert tokenizer_settings(str(root / "model")) == settings
    for name in ("encoder", "encoder_mlm", "preprocessing"):
        assert saved_settings(str(root / "exported" / name / "1")) == settings, name
    preprocessing = tf.saved_model.load(str(root / "exported" / "preprocessing" / "1"))
    got = preprocessing.tokenize(tf.constant(["Für Käse"])).merge_dims(1, 2).to_list()[0]
    assert got == [tokens.index(token) for token in FullTokenizer(tokens, True, False).tokenize("Für Käse")]
    assert got[0] == tokens.index("für")


@pytest.mark.slow  # runs the commands: bert-vocab, bert-export, ...
def test_fine_tuning_reads_the_settings_of_a_saved_model_and_of_a_model_dir(handed_off):
    root, settings = handed_off["root"], handed_off["settings"]
    base = dict(train_file="t.csv", dev_file="t.csv", output_dir="out")
    for source in ({"init_saved_model": str(root / "exported" / "encoder" / "1")},
                   {"init_checkpoint": str(root / "model")}):
        _, _, got = load_encoder(FinetuningRecipe(**source, **base))
        assert got == settings, source
        with pytest.raises(InputError, match="--nodo_lower_case contradicts"):
            load_encoder(FinetuningRecipe(**source, **base, do_lower_case=False))


@pytest.mark.slow  # runs the commands: bert-vocab, bert-export, ...
def test_hf_folder_carries_the_settings_out_and_back_in(handed_off, tmp_path):
    root = handed_off["root"]
    out = run_cli("convert", "--to=hf", f"--input={root / 'model'}", f"--output={tmp_path / 'hf'}")
    assert out.returncode == 0, out.stderr[-3000:]
    config = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert (config["do_lower_case"], config["strip_accents"]) == (True, False)
    back = run_cli("convert", "--from=hf", f"--input={tmp_path / 'hf'}", f"--output={tmp_path / 'back'}")
    assert back.returncode == 0, back.stderr[-3000:]
    assert TokenizerSettings.read(str(tmp_path / "back" / "vocab.txt")) == handed_off["settings"]
    refused = run_cli("convert", "--to=hf", f"--input={root / 'model'}", f"--output={tmp_path / 'x'}",
                      "--strip_accents")
    assert refused.returncode == 2 and "--strip_accents contradicts" in refused.stderr.splitlines()[-1]


@pytest.mark.slow  # runs the commands: bert-vocab, bert-export, ...
def test_an_extended_vocab_keeps_the_settings_of_its_base(handed_off, tmp_path):
    """A cased base that keeps accents: the words are counted as it reads them ("Brückenbau", not "bruckenbau"),
    and the extended vocab keeps its settings file."""
    base = tmp_path / "base.txt"
    tokens = list(SPECIAL_TOKENS) + ["B", "##r", "##ü", "##c", "##k", "##e", "##n", "##b", "##a", "##u"]
    base.write_text("".join(f"{t}\n" for t in tokens + [f"[unused{i}]" for i in range(5)]), encoding="utf-8")
    TokenizerSettings.of(do_lower_case=False).write_beside(str(base))
    (tmp_path / "domain.txt").write_text("Brückenbau Brückenbau\n" * 5)
    extended = run_cli("vocab", f"--input_file={tmp_path / 'domain.txt'}", f"--extend={base}", "--min_frequency=2",
                       "--keep_unused=0", f"--output_file={tmp_path / 'extended.txt'}")
    assert extended.returncode == 0, extended.stderr[-3000:]
    assert TokenizerSettings.read(str(tmp_path / "extended.txt")) == TokenizerSettings(False, False)
    assert "Brückenbau" in read_vocab_file(str(tmp_path / "extended.txt"))

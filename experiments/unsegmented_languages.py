"""What the quick start's vocab does to text written without spaces between words (Japanese, Thai): pieces per
word measured against a word segmenter, pieces that straddle two words, words over the tokenizer's 200-character
limit (each one [UNK]: text lost), and [UNK].

    .venv/bin/pip install fugashi unidic-lite pythainlp     # the segmenters, for measuring only
    .venv/bin/python -m experiments.unsegmented_languages --language japanese \\
        --vocab /tmp/language_quick_start/japanese-1500/vocab.txt \\
        --text /tmp/language_quick_start/japanese-1500/data/heldout.txt

The tokenizer splits text on whitespace, punctuation and around each CJK ideograph (bert_tf/text/normalization.py),
then runs WordPiece on each "word" so split. Japanese kana runs between ideographs and Thai runs between spaces
hold several linguistic words: this measures what that costs. The segmenters (fugashi with unidic-lite for
Japanese, pythainlp's default `newmm` for Thai) only give the linguistic words to measure against; the tokenizer
never uses them. A row is appended to `experiments/results/unsegmented_languages/<language>.jsonl`:
- `tokenizer_words`, `tokenizer_word_characters` (mean), `longest_tokenizer_word`, `overlong_words`: the
  tokenizer's words and those over 200 characters;
- `segmenter_words`, `pieces_per_segmenter_word`: WordPiece pieces per word of the segmenter (punctuation and
  spaces not counted as words, their pieces not counted either);
- `straddling_pieces`: the share of pieces (of more than one character) whose characters belong to two or more of
  the segmenter's words;
- `unk_share`: [UNK] among the pieces.
"""

import argparse
import datetime
import json
import sys

import numpy as np

from bench.harness import write_result
from experiments import RESULTS
from experiments.language_quick_start import normalizer, tokenizer_for_vocab


def japanese_words(line, tagger=[]):  # noqa: B006 (one tagger, made on first use: loading the dictionary costs)
    if not tagger:
        import fugashi
        tagger.append(fugashi.Tagger())
    return [word.surface for word in tagger[0](line)]


def thai_words(line):
    from pythainlp.tokenize import word_tokenize
    return word_tokenize(line, keep_whitespace=False)


SEGMENTERS = {"japanese": japanese_words, "thai": thai_words}


def word_spans(line, words):
    """(start, end) of each segmenter word in `line`, found in order (a word the segmenter rewrote is skipped)."""
    spans, position = [], 0
    for word in words:
        start = line.find(word, position)
        if start < 0 or not word.strip():
            continue
        spans.append((start, start + len(word)))
        position = start + len(word)
    return spans


def normalized_with_offsets(tokenizer, line):
    """The tokenizer's normalized line, character by character, with each normalized character's raw offset."""
    normalized = normalizer(tokenizer)
    text, offsets = [], []
    for i, char in enumerate(line):
        for out in normalized(char):
            text.append(out)
            offsets.append(i)
    return "".join(text), offsets


def measure(tokenizer, lines, segment):
    """The figures of the module's docstring over `lines`."""
    from bert_tf.text.normalization import MAX_CHARS_PER_WORD, is_punctuation, split_words
    figures = {"lines": 0, "tokenizer_words": 0, "tokenizer_word_characters": 0, "longest_tokenizer_word": 0,
               "overlong_words": 0, "segmenter_words": 0, "pieces": 0, "word_pieces": 0,
               "multi_character_pieces": 0, "straddling_pieces": 0, "unk_pieces": 0}
    for line in lines:
        normalized, offsets = normalized_with_offsets(tokenizer, line)
        words, spans, position = split_words(normalized), [], 0
        for word in words:
            start = normalized.find(word, position)
            spans.append((start, start + len(word)))
            position = start + len(word)
        ids, row_splits = tokenizer.tokenize_to_ids(words) if words else (np.zeros(0), np.zeros(1, np.int64))
        pieces = tokenizer.convert_ids_to_tokens(ids)
        segmented = [s for s in word_spans(line, segment(line))
                     if not all(is_punctuation(c) or c.isspace() for c in line[s[0]:s[1]])]
        word_of_character = np.full(len(line), -1)
        for index, (start, end) in enumerate(segmented):
            word_of_character[start:end] = index
        figures["lines"] += 1
        figures["segmenter_words"] += len(segmented)
        for word, (start, end), first, last in zip(words, spans, row_splits[:-1], row_splits[1:]):
            figures["tokenizer_words"] += 1
            figures["tokenizer_word_characters"] += len(word)
            figures["longest_tokenizer_word"] = max(figures["longest_tokenizer_word"], len(word))
            figures["overlong_words"] += len(word) > MAX_CHARS_PER_WORD
            punctuation = len(word) == 1 and is_punctuation(word)
            at = start
            for piece in pieces[first:last]:
                figures["pieces"] += 1
                figures["unk_pieces"] += piece == "[UNK]"
                length = end - start if piece == "[UNK]" else len(piece) - 2 * piece.startswith("##")
                if not punctuation:
                    figures["word_pieces"] += 1
                if length > 1:
                    figures["multi_character_pieces"] += 1
                    owners = {int(word_of_character[offsets[k]]) for k in range(at, at + length)} - {-1}
                    figures["straddling_pieces"] += len(owners) > 1
                at += length
    return {
        **figures,
        "tokenizer_word_characters": round(figures["tokenizer_word_characters"] / figures["tokenizer_words"], 2),
        "pieces_per_segmenter_word": round(figures["word_pieces"] / figures["segmenter_words"], 4),
        "straddling_share": round(figures["straddling_pieces"] / max(1, figures["multi_character_pieces"]), 4),
        "unk_share": round(figures["unk_pieces"] / figures["pieces"], 6),
    }


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", required=True, choices=sorted(SEGMENTERS))
    parser.add_argument("--vocab", required=True, help="The vocab bert-vocab learnt (its settings file beside it).")
    parser.add_argument("--text", required=True, help="Text to measure, never trained on (e.g. heldout.txt).")
    parser.add_argument("--max_lines", type=int, default=5000)
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    with open(args.text, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()][:args.max_lines]
    tokenizer = tokenizer_for_vocab(args.vocab)
    row = {"language": args.language, "label": args.label, "source": "measured",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "vocab": args.vocab,
           "text": args.text, **measure(tokenizer, lines, SEGMENTERS[args.language])}
    write_result("unsegmented_languages", row, file_name=f"{args.language}.jsonl", results=RESULTS)
    print(json.dumps(row, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])

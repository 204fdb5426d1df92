"""The README's quick start, steps 1-5 as written (split, bert-vocab, bert-create-pretraining-data, bert-pretrain
--config=small_fast, bert-evaluate), on a corpus in another language, and what it gives: the held-out [UNK] share,
pieces per word, held-out masked-LM accuracy beside the order-blind baseline, the plateau line.

    .venv/bin/python -m experiments.language_corpora --out /tmp/language_corpora
    .venv/bin/python -m experiments.language_quick_start --corpus /tmp/language_corpora/chinese.txt --steps 1500 \\
        --outside /tmp/language_corpora/chinese_outside.txt

The commands are the README's commands block itself, read from README.md up to its step 6 and run in bash with the
four variables set (CORPUS, STEPS, OUT; TASK is read only from step 7 on); `bash -x` stamps each command's start,
which gives each step's time. One row per run is appended to
`experiments/results/language_quick_start/<corpus>.jsonl`:
- `heldout_unk_share`: [UNK] among the held-out records' tokens (`heldout-seq128.tfrecord`: the input ids that
  are not padding, with each masked position counted as its original token), the figure of issue 42's goal;
- `pieces_per_word`, `characters_per_piece`, `word_unk_share`: heldout.txt tokenized by the vocab, a word being
  what the tokenizer splits on (whitespace, punctuation, each CJK ideograph alone); `overlong_words`: words over
  the tokenizer's 200 characters (each one [UNK]); `words_losing_a_mark`: the words whose normalization drops a
  combining mark (ü -> u, が -> か: another word);
- `outside_unk_share`: [UNK] among the WordPiece tokens of `--outside` (text of the same language from other
  packages, never trained on), where given;
- `vocab_tokens`, `joined_ideographs_or_punctuation`: the vocab's size and its `##` tokens that can never be
  produced (`##` before a CJK ideograph or a punctuation mark);
- bert-evaluate's figures (`masked_lm_accuracy`, `order_blind_baseline`, `unigram_baseline`, ...), `plateau`
  (its plateau line, or null) and the steps' seconds.

`--through_records` runs steps 1-3 only (split, vocab, records): the text's figures without a model, e.g. for
code from before the language work (`--label before`); `--measure_only` runs nothing and measures the vocab and
records a run left in OUT. `--code DIR` runs the commands from another checkout of
the package (`git archive HEAD | tar -x -C DIR`), so that the working tree may change while a run goes on; the
measuring then reads the vocab with that checkout's code too.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
import unicodedata

import numpy as np

from bench.harness import write_result
from experiments import RESULTS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "## Quick start: BERT on your own text"
FENCED_SH = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)
STAMP = re.compile(r"^\+ (\d+\.\d+) (\S+)", re.M)


def readme_steps_1_to_5(readme):
    """The README's quick-start commands block up to (not including) its step 6, the export."""
    with open(readme, encoding="utf-8") as f:
        section = f.read().split(SECTION, 1)[1].split("\n## ", 1)[0]
    commands = FENCED_SH.findall(section)[1]
    return commands.split("\n# 6.", 1)[0] + "\n"


def run_quick_start(commands, corpus, steps, out, code, log):
    """The commands in bash with the variables set; returns (seconds per command name, bert-evaluate's output)."""
    env = {**os.environ, "CORPUS": corpus, "TASK": "unused-before-step-7", "STEPS": str(steps), "OUT": out,
           "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    if code:
        env["PYTHONPATH"] = code
    started = time.time()
    with open(log, "w") as f:
        # bash takes no PS4 from the environment when run as root: the script sets it
        script = "PS4='+ $(date +%s.%N) '\n" + commands
        subprocess.run(["bash", "-e", "-o", "pipefail", "-x", "-c", script], stdout=f, stderr=subprocess.STDOUT,
                       env=env, check=True, cwd=code or None)
    text = open(log, encoding="utf-8", errors="replace").read()
    return {**step_seconds(text, time.time()), "total": round(time.time() - started, 1)}, text


def step_seconds(log, end=None):
    """Seconds per command name from a `bash -x` log's stamps; the last command's up to `end` (left out without)."""
    stamps = [(float(t), name) for t, name in STAMP.findall(log)] + ([(end, "end")] if end else [])
    seconds = {}
    for (start, name), (stop, _) in zip(stamps, stamps[1:]):
        seconds[name] = round(seconds.get(name, 0) + stop - start, 1)
    return seconds


def heldout_unk_share(records, unk_id):
    """[UNK] among the records' tokens: input ids that are not padding, masked positions as their originals."""
    from bert_tf.records.reader import read_records
    unk = total = 0
    for batch in read_records([records]):
        ids = batch["input_ids"].copy()
        rows, slots = np.nonzero(batch["masked_lm_weights"] > 0)
        ids[rows, batch["masked_lm_positions"][rows, slots]] = batch["masked_lm_ids"][rows, slots]
        real = batch["input_mask"] > 0
        unk += int(((ids == unk_id) & real).sum())
        total += int(real.sum())
    return unk / total


def normalizer(tokenizer):
    """text -> the text as `tokenizer` normalizes it (lower-casing, accent stripping as its settings say)."""
    from bert_tf.text.normalization import normalize
    # Code from before the settings file has no strip_accents: do_lower_case alone says both there.
    settings = [tokenizer.strip_accents] if hasattr(tokenizer, "strip_accents") else []
    return lambda text: normalize(text, tokenizer.do_lower_case, *settings)


def text_figures(tokenizer, path, max_lines=None):
    """Pieces per word, characters per piece, [UNK] shares, over-long words and the words that lose a mark (a
    combining mark the normalization drops: the word then reads as another) in a text file's lines."""
    from bert_tf.text.normalization import MAX_CHARS_PER_WORD, normalize, split_words
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line.strip()][:max_lines]
    normalized = normalizer(tokenizer)
    cased = [w for line in lines for w in split_words(normalize(line, False))]
    case = str.lower if tokenizer.do_lower_case else str
    # (the spaces normalization puts around an ideograph are no mark)
    lose_a_mark = sum(unicodedata.normalize("NFC", normalized(w).strip()) != unicodedata.normalize("NFC", case(w))
                      for w in cased)
    words = [w for line in lines for w in split_words(normalized(line))]
    ids, row_splits = tokenizer.tokenize_to_ids(words)
    pieces = np.diff(row_splits)
    unk_words = int(((ids == tokenizer.unk_id)[np.minimum(row_splits[:-1], len(ids) - 1)] & (pieces > 0)).sum())
    return {"words": len(words), "pieces": int(len(ids)), "pieces_per_word": round(len(ids) / len(words), 4),
            "characters_per_piece": round(sum(map(len, words)) / len(ids), 3),
            "unk_share": round(float((ids == tokenizer.unk_id).mean()), 6),
            "word_unk_share": round(unk_words / len(words), 6),
            "overlong_words": sum(len(w) > MAX_CHARS_PER_WORD for w in words),
            "words_losing_a_mark": round(lose_a_mark / len(cased), 6)}


def never_produced(vocab):
    """The vocab's `##` tokens the tokenizer can never produce: `##` before a character it always splits off from
    the letter before it (a CJK ideograph, a punctuation mark)."""
    from bert_tf.text.normalization import normalize, split_words
    return sum(t.startswith("##") and len(t) == 3 and len(split_words(normalize("a" + t[2], False))) > 1
               for t in vocab)


def tokenizer_for_vocab(vocab_file):
    """The tokenizer the quick start's commands use with this vocab: the settings written beside it."""
    from bert_tf.text.tokenizer import FullTokenizer
    if not hasattr(FullTokenizer, "for_vocab"):  # code from before the settings file: lower-case and strip
        return FullTokenizer(vocab_file)
    return FullTokenizer.for_vocab(vocab_file)


def git_commit(code):
    """The commit the commands ran from: this checkout's HEAD, or for --code the folder's name (name it by the
    commit it was archived from, e.g. /tmp/code_998bdcf)."""
    if code:
        return os.path.basename(os.path.normpath(code)).removeprefix("code_")
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="A corpus in the quick start's format.")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--work", default="/tmp/language_quick_start", help="OUT is <work>/<corpus>-<steps>.")
    parser.add_argument("--out", help="OUT itself, e.g. that of a test's run for --measure_only.")
    parser.add_argument("--outside", help="Text of the same language never trained on, for its [UNK] share.")
    parser.add_argument("--code", help="A checkout of the package to run the commands from.")
    parser.add_argument("--label", default="", help="A word saying which code this is (e.g. before, after).")
    parser.add_argument("--through_records", action="store_true",
                        help="Steps 1-3 only (split, vocab, records): the text's figures without a model.")
    parser.add_argument("--measure_only", action="store_true",
                        help="Run nothing: measure the vocab and records that OUT holds (a run stopped after them).")
    args = parser.parse_args(argv)
    code = args.code and os.path.abspath(args.code)
    if code:
        sys.path.insert(0, code)  # the measuring reads the vocab as the commands' code does
    from bert_tf.text.vocabulary import read_vocab_file

    name = os.path.splitext(os.path.basename(args.corpus))[0]
    out = args.out or os.path.join(args.work, f"{name}-{args.steps}" + (f"-{args.label}" if args.label else ""))
    os.makedirs(out, exist_ok=True)
    if args.through_records:  # steps 1-3 only: the vocab and the records, no model
        commands = readme_steps_1_to_5(os.path.join(code or REPO, "README.md")).split("\n# 4.", 1)[0] + "\n"
    else:
        commands = readme_steps_1_to_5(os.path.join(code or REPO, "README.md"))
    log_path = os.path.join(out, "quick_start.log")
    evaluated = os.path.join(out, "model", "evaluations", "heldout-seq128.json")
    summary = os.path.join(out, "model", "training_summary.txt")
    if args.measure_only:  # a run made elsewhere, or cut short after its records: measure what it wrote
        log = open(log_path, encoding="utf-8", errors="replace").read() if os.path.exists(log_path) else ""
        log += open(summary, encoding="utf-8").read() if os.path.exists(evaluated) else ""
        seconds = step_seconds(log)
    else:
        seconds, log = run_quick_start(commands, os.path.abspath(args.corpus), args.steps, out, code, log_path)
    vocab = read_vocab_file(os.path.join(out, "vocab.txt"))
    tokenizer = tokenizer_for_vocab(os.path.join(out, "vocab.txt"))
    evaluation = {}
    if not args.through_records and os.path.exists(evaluated):
        with open(evaluated) as f:
            evaluation = json.load(f)
    plateau = re.search(r"^plateau: .*$", log, re.M)
    row = {
        "corpus": name, "label": args.label,
        "steps": evaluation.get("global_step"),
        "source": "measured",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "code": git_commit(code),
        "quick_start": f"CORPUS={args.corpus} STEPS={args.steps} OUT={out}; README.md's quick start, steps "
                       + ("1-5" if evaluation else "1-3"),
        "corpus_bytes": os.path.getsize(args.corpus),
        "vocab_tokens": len(vocab), "joined_ideographs_or_punctuation": never_produced(vocab),
        "heldout_unk_share": round(heldout_unk_share(os.path.join(out, "data", "heldout-seq128.tfrecord"),
                                                     tokenizer.unk_id), 6),
        "heldout_text": text_figures(tokenizer, os.path.join(out, "data", "heldout.txt")),
        "outside_text": text_figures(tokenizer, args.outside) if args.outside else None,
        "plateau": plateau.group() if plateau else None, "seconds": seconds,
        **{k: v for k, v in evaluation.items() if not isinstance(v, (dict, list))},
    }
    write_result("language_quick_start", row, file_name=f"{name}.jsonl", results=RESULTS)
    print(json.dumps(row, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])

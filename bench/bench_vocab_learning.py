"""`bert-vocab`'s learner beside Hugging Face tokenizers' WordPiece trainer, on the same text in the same run.

    .venv/bin/python -m experiments.vocab_learning_text --root ROOT --out /tmp/vocab_text/text.txt   # 106 MB
    .venv/bin/python -m bench.bench_vocab_learning --text /tmp/vocab_text/text.txt --repeats 2

The text's every 100th line is held out (`--work_dir`'s heldout.txt; the rest is its train.txt). Each
learner then learns an uncased vocab of `--vocab_size` tokens from the training lines, in a fresh process, with
`--threads` threads (the package's counting processes; RAYON_NUM_THREADS for tokenizers), in alternating order over
`--repeats` (ours first in the first repeat, theirs in the second, ...), so a slow spell of a shared machine hits both.
Timed: the learning, file reading included (Python's import and TensorFlow's are not), as wall and CPU seconds.
Then both vocabs tokenize the held-out lines with the package's WordPiece (bert_tf/text/tokenizer.py): the [UNK]
share of pieces and of words, pieces per word (bert_tf/text/vocab_report.py), and pieces per word over the words
both vocabs can spell (a word that is [UNK] counts one piece, which flatters a vocab that spells fewer words); and
each vocab's single characters, "##" + character tokens, and those of them that can never be produced ("##" before
a CJK ideograph or a punctuation mark).
Hugging Face's trainer runs as `BertWordPieceTokenizer(lowercase=True, strip_accents=True).train(...)` with its
defaults (`min_frequency=2`, `limit_alphabet=1000`) unless `--hf_limit_alphabet` says otherwise. One row per
learner and repeat goes to bench/results/bench_vocab_learning/results.jsonl.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench.harness import write_result
from bench.run_header import load_average, run_header

SCRIPT = "bench_vocab_learning"
HELD_OUT_EVERY = 100

# Each learner runs in a fresh process: it prints one JSON line {"seconds", "cpu_seconds", "tokens"}.
_OURS = """
import functools, json, resource, sys, time
from bert_tf.text.corpus import CorpusCounts, read_documents
from bert_tf.text.normalization import normalize
from bert_tf.text.vocab_learning import learn_vocab, write_vocab
text, vocab_size, threads, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def cpu():
    return sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))
started, cpu_started = time.perf_counter(), cpu()
sentences = (s for d in read_documents(text, "sentences", CorpusCounts()) for s in d)
learned = learn_vocab(sentences, vocab_size, functools.partial(normalize, do_lower_case=True), processes=threads)
seconds, cpu_seconds = time.perf_counter() - started, cpu() - cpu_started
write_vocab(learned.tokens, out)
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "tokens": len(learned.tokens)}))
"""
_HUGGING_FACE = """
import json, resource, sys, time
from tokenizers import BertWordPieceTokenizer
text, vocab_size, limit_alphabet, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
tokenizer = BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=True, lowercase=True)
started, cpu_started = time.perf_counter(), cpu()
tokenizer.train([text], vocab_size=vocab_size, limit_alphabet=limit_alphabet, show_progress=False)
seconds, cpu_seconds = time.perf_counter() - started, cpu() - cpu_started
vocab = tokenizer.get_vocab()
with open(out, "w", encoding="utf-8") as f:
    f.write("".join(token + "\\n" for token in sorted(vocab, key=vocab.get)))
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "tokens": len(vocab)}))
"""


def split_text(text, directory):
    """Writes the text's every `HELD_OUT_EVERY`-th non-blank line to held-out, the rest (blank lines included) to
    train; returns (train, held-out) paths."""
    train, heldout = (os.path.join(directory, name) for name in ("train.txt", "heldout.txt"))
    with open(text, encoding="utf-8") as f, open(train, "w", encoding="utf-8") as t, \
            open(heldout, "w", encoding="utf-8") as h:
        lines = 0
        for line in f:
            if line.strip():
                lines += 1
                if lines % HELD_OUT_EVERY == 0:
                    h.write(line)
                    continue
            t.write(line)
    return train, heldout


def learn(learner, train, vocab_size, threads, hf_limit_alphabet, out):
    """Runs one learner in a fresh process; its JSON line as a dict."""
    if learner == "bert_tf":
        command = [sys.executable, "-c", _OURS, train, str(vocab_size), str(threads), out]
    else:
        command = [sys.executable, "-c", _HUGGING_FACE, train, str(vocab_size), str(hf_limit_alphabet), out]
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        sys.exit(f"{learner} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text", required=True, help="the text (a paragraph a line), e.g. from "
                                                      "experiments/vocab_learning_text.py")
    parser.add_argument("--vocab_size", type=int, default=30522)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--hf_limit_alphabet", type=int, default=1000, help="tokenizers' default: 1000")
    parser.add_argument("--work_dir", default=None, help="where the split text and the vocabs go (default: a "
                                                         "temporary folder)")
    args = parser.parse_args()
    print("\n".join(run_header(("tensorflow", "tensorflow-text", "tokenizers", "numpy"))), flush=True)
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="bench_vocab_learning_")
    os.makedirs(work_dir, exist_ok=True)
    train, heldout = split_text(args.text, work_dir)
    print(f"text: {args.text} ({os.path.getsize(args.text) / 1e6:.1f} MB), held out: every {HELD_OUT_EVERY}th line "
          f"({os.path.getsize(heldout) / 1e6:.2f} MB)", flush=True)

    import functools

    from bert_tf.text.corpus import CorpusCounts, read_documents
    from bert_tf.text.normalization import normalize
    from bert_tf.text.vocab_report import report_vocab, unknown_words
    from bert_tf.text.vocabulary import read_vocab_file
    from bert_tf.text.word_counting import count_words
    from bert_tf.text.wordpiece_learner import stands_alone

    heldout_words = count_words([s for d in read_documents(heldout, "sentences", CorpusCounts()) for s in d],
                                functools.partial(normalize, do_lower_case=True), processes=1).words
    timings = {"bert_tf": [], "hugging_face": []}
    for repeat in range(args.repeats):
        learned = {}
        for learner in (("bert_tf", "hugging_face") if repeat % 2 == 0 else ("hugging_face", "bert_tf")):
            out = os.path.join(work_dir, f"{learner}_{repeat}.txt")
            learned[learner] = (out, learn(learner, train, args.vocab_size, args.threads, args.hf_limit_alphabet,
                                           out))
        # Pieces per word also over the words both vocabs can spell: a word that is [UNK] is one piece.
        unknown_to_either = set().union(*(unknown_words(out, heldout_words) for out, _ in learned.values()))
        known_to_both = {w: c for w, c in heldout_words.items() if w not in unknown_to_either}
        for learner, (out, timing) in learned.items():
            report, known = report_vocab(out, heldout_words), report_vocab(out, known_to_both)
            tokens = read_vocab_file(out)
            row = {"source": "measured", "learner": learner, "repeat": repeat, "text": os.path.basename(args.text),
                   "text_mb": round(os.path.getsize(train) / 1e6, 1), "threads": args.threads,
                   "vocab_size": args.vocab_size, **timing, "heldout_words": report.words,
                   "unk_share_of_pieces": report.unknown_pieces / max(report.pieces, 1),
                   "unk_share_of_words": report.unknown_words / max(report.words, 1),
                   "pieces_per_word": report.pieces / max(report.words, 1),
                   "characters": sum(len(t) == 1 for t in tokens),
                   "continuations": sum(len(t) == 3 and t.startswith("##") for t in tokens),
                   "impossible_continuations": sum(len(t) == 3 and t.startswith("##") and stands_alone(t[2])
                                                   for t in tokens),
                   "words_known_to_both": known.words, "pieces_per_word_known_to_both": known.pieces / known.words,
                   "load_average": load_average()}
            if learner == "hugging_face":
                row["hf_limit_alphabet"] = args.hf_limit_alphabet
            write_result(SCRIPT, row)
            timings[learner].append(timing["seconds"])
            print(f"{learner:13s} repeat {repeat}: {timing['seconds']:7.1f} s wall, {timing['cpu_seconds']:7.1f} s "
                  f"CPU, {timing['tokens']} tokens; {report.line('held-out')}; "
                  f"{known.pieces / known.words:.3f} pieces per word on the {known.words} words both can spell",
                  flush=True)
    ours, theirs = (statistics.median(timings[k]) for k in ("bert_tf", "hugging_face"))
    print(f"median wall seconds: bert_tf {ours:.1f}, hugging_face {theirs:.1f}; bert_tf's speed is "
          f"{theirs / ours:.2f}x Hugging Face's; load average at the end: {load_average()}")


if __name__ == "__main__":
    main()

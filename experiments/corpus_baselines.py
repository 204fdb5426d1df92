"""How hard a corpus is for masked-LM, before any model: three predictors fitted on its training records and scored
on its held-out records (the quick start's, at 128 tokens), one JSON line per corpus.

    .venv/bin/python -m experiments.corpus_baselines /tmp/quick_start_corpora/{bible,python_docs,shakespeare}/data

- `unigram`: always the most frequent masked word (what `bert-evaluate` calls the unigram baseline);
- `order_blind`: `bert_tf.training.word_order_baseline` (the plateau: what a model that ignores word order scores);
- `neighbours`: the most frequent masked word between the same left and right neighbours in the training records
  (backing off to the left neighbour alone, then the unigram): a model that reads word order beats the plateau by
  about this much at least.

Rows go to `experiments/results/corpus_baselines/baselines.jsonl`.
"""

import collections
import json
import os
import sys

import numpy as np

from bert_tf.records.reader import read_records
from bert_tf.training.word_order_baseline import order_blind_baseline
from experiments import RESULTS as EXPERIMENT_RESULTS

RESULTS = os.path.join(EXPERIMENT_RESULTS, "corpus_baselines", "baselines.jsonl")


def _masked(path, max_records):
    """(left neighbour, right neighbour, masked word) of every real masked position."""
    rows = []
    for batch in read_records([path], max_records=max_records):
        ids, positions = batch["input_ids"], batch["masked_lm_positions"]
        left = np.take_along_axis(ids, np.maximum(positions - 1, 0), axis=1)
        right = np.take_along_axis(ids, np.minimum(positions + 1, ids.shape[1] - 1), axis=1)
        real = batch["masked_lm_weights"] > 0
        rows.extend(zip(left[real].tolist(), right[real].tolist(), batch["masked_lm_ids"][real].tolist()))
    return rows


def neighbour_baseline(train_path, eval_path, max_records=40000):
    """The neighbours predictor's accuracy and the unigram one's, on the eval records."""
    both, left_only, words = (collections.defaultdict(collections.Counter), collections.defaultdict(
        collections.Counter), collections.Counter())
    for left, right, word in _masked(train_path, max_records):
        both[left, right][word] += 1
        left_only[left][word] += 1
        words[word] += 1
    unigram = words.most_common(1)[0][0]
    held = _masked(eval_path, max_records)
    hits = unigram_hits = 0
    for left, right, word in held:
        counts = both.get((left, right)) or left_only.get(left)
        hits += (counts.most_common(1)[0][0] if counts else unigram) == word
        unigram_hits += unigram == word
    return hits / len(held), unigram_hits / len(held), len(held)


def main(data_dirs):
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    for data in data_dirs:
        train, held = os.path.join(data, "train-seq128.tfrecord"), os.path.join(data, "heldout-seq128.tfrecord")
        neighbours, unigram, positions = neighbour_baseline(train, held)
        row = {"corpus": os.path.basename(os.path.dirname(os.path.abspath(data))), "seq": 128,
               "masked_positions": positions, "unigram": round(unigram, 4),
               "order_blind": round(order_blind_baseline([train], [held])["accuracy"], 4),
               "neighbours": round(neighbours, 4),
               "command": " ".join([".venv/bin/python -m experiments.corpus_baselines", *data_dirs]),
               "source": "measured"}
        with open(RESULTS, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(row)


if __name__ == "__main__":
    main(sys.argv[1:])

"""The plateau, measured per corpus: the held-out masked-LM accuracy of a predictor that ignores word order, and the
line that tells a user when a run sits there.

A small BERT first learns word frequencies and the bag of the sequence's words, and only later where words stand
(docs/convergence.md, "What the plateau is"). Until then it scores about what this predictor scores, which sees
no position:

- a masked position that still shows a word (the recipe keeps the original word at 10% of them and puts a random
  one at another 10%) is predicted as that word when the word is more frequent as a masked target than one drawn
  uniformly from the vocab (a random replacement mostly is not);
- a `[MASK]` is predicted from the record's bag of visible words: the candidate `w` with the highest
  `log P(w) + beta * mean over the bag's distinct words c of PMI(w, c)`, where PMI(w, c) says how much more often
  `w` is the masked word of a training record that shows `c` than of any record, and `beta` is the best of a grid
  on training records held back from the counts (`beta = 0` is the unigram guess, so the predictor is at least
  as good as that on them).

On the Bible's held-out chapters at 128 tokens (the quick start's records) the predictor scores 0.149, where tiny
BERTs on the plateau scored 0.147-0.163 and the quick start's run that left it 0.332 (docs/convergence.md).
"""

import numpy as np

from bert_tf.records.reader import read_records
from bert_tf.records.schema import read_schema

# A run under the order-blind accuracy plus this has not learnt word order: on the Bible, runs on the plateau sit
# within 0.015 of it, runs that left it 0.18 above (docs/convergence.md).
PLATEAU_MARGIN = 0.05
# Measured in docs/convergence.md ("More steps on a finished run"): extending a run on the plateau left it there.
REMEDY = ("Remedy: pre-train again in a new --model_dir with a larger --num_train_steps (small_fast leaves the "
          "plateau in its 32-token phase, which grows with the budget; more steps on this model directory would all "
          "go to its last phase)")
CANDIDATES = 1000  # the most frequent masked words; the rest are 8-11% of masked positions (measured)
BETAS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0)
SMOOTHING = 10.0  # pseudo-counts of the unigram distribution added to each context word's counts
_HELD_BACK = 2000  # training records that choose beta instead of counting
_CHUNK = 256  # records scored at once: [_CHUNK x bag words x CANDIDATES] floats
_FIT_CHUNK = 4096  # records counted at once: one bincount over [vocab x CANDIDATES] each


def order_blind_baseline(train_files, eval_files, max_train_records=20000, max_eval_records=10000):
    """The order-blind predictor's masked-LM accuracy on `eval_files`, fitted on `train_files` (see the module).

    Args:
        train_files, eval_files: record files of `bert-create-pretraining-data` (one instance per record).
        max_train_records, max_eval_records: the records read at most (in file order), to keep it a few seconds.

    Returns:
        A dict: `accuracy` (weighted as `evaluate` weighs), `beta`, `mask_id` (inferred: the word most masked
        positions show instead of their own), `train_records`, `eval_records`; None for packed records.

    Example:
    >>> order_blind_baseline(["train-seq128.tfrecord"], ["heldout-seq128.tfrecord"])["accuracy"]  # doctest: +SKIP
    0.149
    """
    if read_schema(list(train_files)).packed or read_schema(list(eval_files)).packed:
        return None  # their instances share a row's bag: not the records a user evaluates
    train = _read(train_files, max_train_records)
    held = _read(eval_files, max_eval_records)
    vocab_size = 1 + max(int(part[name].max()) for part in (train, held)
                         for name in ("input_ids", "masked_lm_ids"))
    mask_id = _mask_id(train)
    counted = {name: value[:-_HELD_BACK] for name, value in train.items()} if len(train["input_ids"]) > \
        2 * _HELD_BACK else train
    tuning = {name: value[-_HELD_BACK:] for name, value in train.items()}
    model = _fit(counted, vocab_size, mask_id)
    tuning_scores = _bag_scores(model, tuning)
    beta = max(BETAS, key=lambda b: _accuracy(model, tuning, b, tuning_scores))
    return {"accuracy": _accuracy(model, held, beta, _bag_scores(model, held)), "beta": beta, "mask_id": mask_id,
            "train_records": len(train["input_ids"]), "eval_records": len(held["input_ids"])}


def baseline_line(baseline):
    """The line beside the held-out accuracy.

    >>> baseline_line({"accuracy": 0.1503, "beta": 4.0})
    "order-blind baseline 0.1503: what a model that ignores word order scores (a bag of the record's words)"
    """
    return (f"order-blind baseline {baseline['accuracy']:.4f}: what a model that ignores word order scores (a bag "
            f"of the record's words)")


def plateau_line(accuracy, baseline):
    """The one line that says a run sits on the plateau, with the remedy; None when it has left it.

    >>> plateau_line(0.158, {"accuracy": 0.150})[:59]
    'plateau: held-out masked-LM accuracy 0.1580 is under 0.2000'
    >>> plateau_line(0.332, {"accuracy": 0.150}) is None
    True
    """
    if baseline is None or accuracy >= baseline["accuracy"] + PLATEAU_MARGIN:
        return None
    return (f"plateau: held-out masked-LM accuracy {accuracy:.4f} is under {baseline['accuracy'] + PLATEAU_MARGIN:.4f} "
            f"(the order-blind baseline {baseline['accuracy']:.4f} + {PLATEAU_MARGIN}): the model has not learnt word "
            f"order yet. {REMEDY}.")


def _read(files, max_records):
    batches = list(read_records(list(files), max_records=max_records))
    return {name: np.concatenate([b[name] for b in batches]) for name in
            ("input_ids", "masked_lm_positions", "masked_lm_ids", "masked_lm_weights")}


def _shown(records):
    return np.take_along_axis(records["input_ids"], records["masked_lm_positions"], axis=1)


def _mask_id(records):
    """The token most masked positions show in place of their own word: [MASK] (80% of them in the recipe)."""
    shown, weights = _shown(records), records["masked_lm_weights"] > 0
    replaced = shown[weights & (shown != records["masked_lm_ids"])]
    return int(np.bincount(replaced).argmax()) if replaced.size else -1


def _bags(records, vocab_size):
    """(rows, words): each record's distinct visible words, masked positions left out, ordered by record."""
    ids = records["input_ids"].copy()
    np.put_along_axis(ids, records["masked_lm_positions"], vocab_size, axis=1)  # a column dropped below
    present = np.zeros((len(ids), vocab_size + 1), bool)
    present[np.arange(len(ids))[:, None], ids] = True
    return np.nonzero(present[:, :vocab_size])


def _fit(records, vocab_size, mask_id):
    weights = records["masked_lm_weights"].astype(np.float64)
    frequency = np.bincount(records["masked_lm_ids"].ravel(), weights=weights.ravel(), minlength=vocab_size)
    prior = frequency / frequency.sum()
    candidates = np.argsort(-frequency, kind="stable")[:min(CANDIDATES, np.count_nonzero(frequency))]
    column = np.full(vocab_size, -1)
    column[candidates] = np.arange(len(candidates))
    counts = np.zeros(vocab_size * len(candidates))
    for start in range(0, len(weights), _FIT_CHUNK):
        part = {name: value[start:start + _FIT_CHUNK] for name, value in records.items()}
        rows, words = _bags(part, vocab_size)
        targets = column[part["masked_lm_ids"]]
        target_weights = weights[start:start + _FIT_CHUNK] * (targets >= 0)
        pairs = words[:, None] * len(candidates) + np.maximum(targets[rows], 0)
        counts += np.bincount(pairs.ravel(), weights=target_weights[rows].ravel(), minlength=counts.size)
    counts = counts.reshape(vocab_size, len(candidates))
    candidate_prior = prior[candidates][None, :]
    # log P(w | c shown) - log P(w), with SMOOTHING pseudo-counts of P(w) so rare context words say little.
    pmi = (np.log(counts + SMOOTHING * candidate_prior) - np.log(counts.sum(1, keepdims=True) + SMOOTHING)
           - np.log(candidate_prior)).astype(np.float32)
    return {"pmi": pmi, "log_prior": np.log(candidate_prior[0]), "candidates": candidates, "prior": prior,
            "vocab_size": vocab_size, "mask_id": mask_id}


def _bag_scores(model, records):
    """Each record's mean PMI with every candidate over its bag's distinct words: [records, candidates]."""
    scores = np.zeros((len(records["input_ids"]), len(model["candidates"])), np.float32)
    for start in range(0, len(scores), _CHUNK):
        part = {name: value[start:start + _CHUNK] for name, value in records.items()}
        rows, words = _bags(part, model["vocab_size"])
        if len(rows):
            starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            sums = np.add.reduceat(model["pmi"][words], starts, axis=0)
            sizes = np.diff(np.r_[starts, len(rows)])[:, None]
            scores[start + rows[starts]] = sums / sizes
    return scores


def _accuracy(model, records, beta, scores):
    guess = model["candidates"][np.argmax(model["log_prior"] + beta * scores, axis=1)]
    shown = _shown(records)
    copy = (shown != model["mask_id"]) & (model["prior"][shown] > 1.0 / model["vocab_size"])
    predicted = np.where(copy, shown, guess[:, None])
    weights = records["masked_lm_weights"]
    return float(np.sum(weights * (predicted == records["masked_lm_ids"]))) / max(float(np.sum(weights)), 1e-5)

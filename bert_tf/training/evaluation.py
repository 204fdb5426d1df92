"""Evaluation on held-out records with the original `run_pretraining.py` eval metrics."""

import numpy as np
import tensorflow as tf

from bert_tf.errors import InputError
from bert_tf.modeling.losses import masked_lm_loss_of_sums, masked_lm_sums, next_sentence_sums
from bert_tf.records.reader import read_records
from bert_tf.training.strategy import split_over_local_replicas, worker_layout

EVAL_METRICS = ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss", "loss")
# What each replica sums over its slice of a batch, packed in this order.
_SUM_NAMES = ("mlm_correct", "mlm_loss", "mlm_weight")
_NSP_SUM_NAMES = ("nsp_correct", "nsp_loss", "examples")


def evaluate(model, dataset, max_steps=None, strategy=None, batch_size=None):
    """The original `metric_fn` over (at most `max_steps` batches of) `dataset`, computed on the replicas.

    Every record counts once: a batch shorter than `batch_size` (the last one of a dataset built with
    `drop_remainder=False`, or the only one of an eval set smaller than the batch) is padded with rows of zero
    weight, which no metric counts, so the batches keep one shape.

    masked_lm_accuracy: `tf.metrics.accuracy` of the argmax at the masked positions, weighted by
    `masked_lm_weights`, over all positions of all batches. masked_lm_loss: the weighted mean of the per-position
    loss (`tf.metrics.mean(masked_lm_example_loss, weights)`). next_sentence_accuracy / next_sentence_loss: means over
    all examples. loss: the mean over batches of the training loss (what the Estimator reported as `loss`).

    Each batch is split over this worker's replicas (`strategy.run`); every replica sums its slice's counts into
    one packed vector, summed across replicas once per batch, so the numbers are those of the whole batch on any
    number of replicas. With several workers, each reads the whole eval input (its batches are identical), so the
    cross-worker sum is divided by the number of workers and every worker reports the same numbers.

    Args:
        model: a `BertPretrainer` (created under `strategy`'s scope when one is given).
        dataset: batches of pre-training features (`pretraining_dataset` of an `InputSpec` with `is_training=False`).
        max_steps: the original `--max_eval_steps` (None: the whole dataset).
        strategy: the `tf.distribute.Strategy` to evaluate on; the current one when None.
        batch_size: the batch every step computes (short batches are padded to it); None: the first batch's size,
            rounded up to split over the replicas.

    Returns:
        A dict of floats with `EVAL_METRICS` and `eval_batches` (and the NSP ones only when the model uses NSP).

    Example:
    >>> evaluate(model, pretraining_dataset(InputSpec("heldout.tfrecord", 128, 20, 8, is_training=False)),
    ...          max_steps=100)  # doctest: +SKIP
    {'masked_lm_accuracy': 0.41, 'masked_lm_loss': 3.2, ..., 'eval_batches': 100}
    """
    strategy = strategy or tf.distribute.get_strategy()
    layout = worker_layout(strategy)
    names = _SUM_NAMES + (_NSP_SUM_NAMES if model.use_next_sentence else ())

    def replica_sums(features):
        features = dict(features)
        row_weights = features.pop(_ROW_WEIGHTS)
        outputs = model(features, training=False)
        mlm = masked_lm_sums(outputs["mlm_logits"], features["masked_lm_ids"], features["masked_lm_weights"])
        sums = {"mlm_correct": mlm["correct"], "mlm_loss": mlm["loss"], "mlm_weight": mlm["weight"]}
        if model.use_next_sentence:
            # Over instances: a packed row's [K, 2] logits count once per instance it holds.
            if "next_sentence_weights" in features:  # packed rows: padding rows have no instance
                nsp = next_sentence_sums(outputs["nsp_logits"], features["next_sentence_labels"],
                                         features["next_sentence_weights"])
            else:
                nsp = next_sentence_sums(outputs["nsp_logits"], tf.reshape(features["next_sentence_labels"], [-1]),
                                         row_weights)
            sums.update(nsp_correct=nsp["correct"], nsp_loss=nsp["loss"], examples=nsp["count"])
        return tf.stack([sums[name] for name in names])

    @tf.function(autograph=False)  # no tensor-dependent Python control flow to convert
    def batch_sums(batch):
        per_replica = strategy.run(replica_sums, args=(split_over_local_replicas(strategy, layout, batch),))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    totals, batch_losses = np.zeros(len(names)), []
    for features in dataset:
        if max_steps is not None and len(batch_losses) >= max_steps:
            break
        features = {name: value.numpy() for name, value in features.items()}
        rows = len(features["input_word_ids"])
        if batch_size is None:
            batch_size = -(-rows // layout.local_replicas) * layout.local_replicas
        features = _padded(features, batch_size)
        check_eval_batch_size(batch_size, layout)
        sums = dict(zip(names, batch_sums(features).numpy().astype(np.float64) / layout.num_workers))
        totals += [sums[name] for name in names]
        # The training loss of the batch as `pretraining_losses` computes it, from the batch's sums.
        loss = masked_lm_loss_of_sums(sums["mlm_loss"], sums["mlm_weight"])
        if model.use_next_sentence:
            loss += sums["nsp_loss"] / sums["examples"]
        batch_losses.append(loss)
    if not batch_losses:
        raise InputError("The evaluation input yielded no batch: it holds no record; pass held-out records "
                         "written by bert-create-pretraining-data.")
    totals = dict(zip(names, totals))
    results = {"masked_lm_accuracy": totals["mlm_correct"] / max(totals["mlm_weight"], 1e-5),
               "masked_lm_loss": totals["mlm_loss"] / max(totals["mlm_weight"], 1e-5)}
    if model.use_next_sentence:
        results["next_sentence_accuracy"] = totals["nsp_correct"] / totals["examples"]
        results["next_sentence_loss"] = totals["nsp_loss"] / totals["examples"]
    results["loss"] = float(np.mean(batch_losses))
    results["eval_batches"] = len(batch_losses)
    return {k: float(v) if k != "eval_batches" else v for k, v in results.items()}


_ROW_WEIGHTS = "eval_row_weights"


def _padded(features, batch_size):
    """The batch (NumPy arrays) with zero rows appended up to `batch_size`, and `_ROW_WEIGHTS` (1 for a real row,
    0 for padding): padding rows have zero masked-LM weights and no next-sentence instance, so no metric counts
    them."""
    rows = len(features["input_word_ids"])
    if rows > batch_size:
        raise ValueError(f"a batch of {rows} rows is larger than batch_size={batch_size}.")
    padded = {name: np.concatenate([value, np.zeros((batch_size - rows, *value.shape[1:]), value.dtype)])
              for name, value in features.items()}
    padded[_ROW_WEIGHTS] = (np.arange(batch_size) < rows).astype(np.float32)
    return padded


def check_eval_batch_size(eval_batch_size, layout):
    """Raises `InputError` unless `eval_batch_size` splits evenly over the replicas this process drives (every
    replica evaluates an equal slice of each batch): on a pod one process drives every chip, so the paper's 8 does
    not split over 16 or more; nor over 3, 5, 6 or 7 GPUs. `bert-pretrain --platform` sets one that divides.

    Example:
    >>> from bert_tf.training.input_hosts import group_by_host
    >>> from bert_tf.training.strategy import WorkerLayout
    >>> pod = WorkerLayout(16, 16, 1, 0, group_by_host([f"/job:worker/task:{t}/device:TPU:{c}"
    ...                                                 for t in range(4) for c in range(4)]))
    >>> check_eval_batch_size(8, pod)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    bert_tf.errors.InputError: eval_batch_size=8 does not split over the 16 replicas ...: use a multiple of 16, ...
    >>> check_eval_batch_size(256, pod)
    """
    replicas = layout.local_replicas
    if eval_batch_size % replicas:
        valid = -(-eval_batch_size // replicas) * replicas
        raise InputError(f"eval_batch_size={eval_batch_size} does not split over the {replicas} replicas this "
                         f"process drives: use a multiple of {replicas}, e.g. --set=eval.eval_batch_size={valid}.")


def unigram_baseline(train_files, eval_files):
    """The masked-LM accuracy of always predicting the most frequent masked token of `train_files` on `eval_files`
    (weighted as `evaluate` weighs): the bar a model must clear to have learnt anything from context.

    Returns (accuracy, token id).

    Example:
    >>> unigram_baseline(["train.tfrecord"], ["heldout.tfrecord"])  # doctest: +SKIP
    (0.0761, 1010)
    """
    counts = np.zeros(0)
    for batch in read_records(train_files):
        weighted = np.bincount(batch["masked_lm_ids"].ravel(), weights=batch["masked_lm_weights"].ravel(),
                               minlength=len(counts))
        counts = weighted + np.pad(counts, (0, len(weighted) - len(counts)))
    if not counts.any():
        raise InputError(f"{train_files} hold no masked position: pass files written by "
                         f"bert-create-pretraining-data.")
    token = int(np.argmax(counts))
    hits = weight = 0.0
    for batch in read_records(eval_files):
        weights = batch["masked_lm_weights"]
        hits += float(np.sum(weights * (batch["masked_lm_ids"] == token)))
        weight += float(np.sum(weights))
    return hits / max(weight, 1e-5), token


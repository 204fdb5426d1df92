"""Evaluation on held-out records with the original `run_pretraining.py` eval metrics."""

import numpy as np
import tensorflow as tf

from bert_tf.records.reader import read_records

EVAL_METRICS = ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss", "loss")


def evaluate(model, dataset, max_steps=None):
    """The original `metric_fn` over (at most `max_steps` batches of) `dataset`.

    masked_lm_accuracy: `tf.metrics.accuracy` of the argmax at the masked positions, weighted by
    `masked_lm_weights`, over all positions of all batches. masked_lm_loss: the weighted mean of the per-position
    loss (`tf.metrics.mean(masked_lm_example_loss, weights)`). next_sentence_accuracy / next_sentence_loss: means over
    all examples. loss: the mean over batches of the training loss (what the Estimator reported as `loss`).
    Runs on this process's model in the cross-replica context (every worker computes the same numbers).

    Args:
        model: a `BertPretrainer`.
        dataset: batches of pre-training features (`pretraining_dataset(..., is_training=False)`).
        max_steps: the original `--max_eval_steps` (None: the whole dataset).

    Returns:
        A dict of floats with `EVAL_METRICS` and `eval_batches` (and the NSP ones only when the model uses NSP).

    Example:
    >>> evaluate(model, pretraining_dataset("heldout.tfrecord", 128, 20, 8, is_training=False), max_steps=100)  # doctest: +SKIP
    {'masked_lm_accuracy': 0.41, 'masked_lm_loss': 3.2, ..., 'eval_batches': 100}
    """

    @tf.function
    def batch_sums(features):
        outputs = model(features, training=False)
        losses = model.compute_losses(outputs, features)
        log_probs = tf.nn.log_softmax(tf.cast(outputs["mlm_logits"], tf.float32), axis=-1)
        ids = tf.cast(features["masked_lm_ids"], tf.int32)
        weights = tf.cast(features["masked_lm_weights"], tf.float32)
        example_loss = -tf.gather(log_probs, ids, batch_dims=2)
        correct = tf.cast(tf.equal(tf.argmax(log_probs, -1, output_type=tf.int32), ids), tf.float32)
        sums = {"mlm_correct": tf.reduce_sum(weights * correct), "mlm_loss": tf.reduce_sum(weights * example_loss),
                "mlm_weight": tf.reduce_sum(weights), "loss": losses["loss"]}
        if model.use_next_sentence:
            nsp_log_probs = tf.nn.log_softmax(tf.cast(outputs["nsp_logits"], tf.float32), axis=-1)
            labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
            sums["nsp_correct"] = tf.reduce_sum(
                tf.cast(tf.equal(tf.argmax(nsp_log_probs, -1, output_type=tf.int32), labels), tf.float32))
            sums["nsp_loss"] = -tf.reduce_sum(tf.gather(nsp_log_probs, labels, batch_dims=1))
            sums["examples"] = tf.cast(tf.size(labels), tf.float32)
        return sums

    totals, batches = {}, 0
    for features in dataset:
        if max_steps is not None and batches >= max_steps:
            break
        for name, value in batch_sums(features).items():
            totals[name] = totals.get(name, 0.0) + float(value.numpy())
        batches += 1
    if not batches:
        raise ValueError("The evaluation input yielded no batch: it holds fewer records than eval_batch_size "
                         "(batches drop the remainder); use more held-out records or a smaller eval_batch_size.")
    results = {"masked_lm_accuracy": totals["mlm_correct"] / max(totals["mlm_weight"], 1e-5),
               "masked_lm_loss": totals["mlm_loss"] / max(totals["mlm_weight"], 1e-5)}
    if model.use_next_sentence:
        results["next_sentence_accuracy"] = totals["nsp_correct"] / totals["examples"]
        results["next_sentence_loss"] = totals["nsp_loss"] / totals["examples"]
    results["loss"] = totals["loss"] / batches
    results["eval_batches"] = batches
    return results


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
        raise ValueError(f"{train_files} hold no masked position: pass files written by "
                         f"bert-create-pretraining-data.")
    token = int(np.argmax(counts))
    hits = weight = 0.0
    for batch in read_records(eval_files):
        weights = batch["masked_lm_weights"]
        hits += float(np.sum(weights * (batch["masked_lm_ids"] == token)))
        weight += float(np.sum(weights))
    return hits / max(weight, 1e-5), token


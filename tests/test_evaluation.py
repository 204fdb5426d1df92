"""`evaluate` against a NumPy copy of the original run_pretraining.py `metric_fn`, streamed over batches as the
Estimator's eval did."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.training.evaluation import evaluate
from helpers import tiny_config
from pretraining_records import VOCAB_SIZE, feature_batches

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

SEQ, PRED = 16, 4
CONFIG = tiny_config(vocab_size=VOCAB_SIZE, max_position_embeddings=SEQ)


def log_softmax(logits):
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def original_metric_fn(batches, outputs, use_next_sentence=True):
    """The original metric_fn, streamed over the batches: tf.metrics.accuracy(ids, argmax, weights) and
    tf.metrics.mean(example_loss, weights) over all masked positions; unweighted accuracy and mean loss over all
    next-sentence examples; and the Estimator's eval `loss`, the mean over batches of the training loss
    (masked-LM sum(w * loss) / (sum(w) + 1e-5), plus the next-sentence mean)."""
    mlm_log_probs = np.concatenate([log_softmax(o["mlm_logits"]).reshape(-1, VOCAB_SIZE) for o in outputs])
    ids = np.concatenate([b["masked_lm_ids"].reshape(-1) for b in batches])
    weights = np.concatenate([b["masked_lm_weights"].reshape(-1) for b in batches]).astype(np.float64)
    example_loss = -mlm_log_probs[np.arange(len(ids)), ids]
    results = {"masked_lm_accuracy": np.sum(weights * (mlm_log_probs.argmax(-1) == ids)) / np.sum(weights),
               "masked_lm_loss": np.sum(weights * example_loss) / np.sum(weights)}
    batch_losses = []
    for batch, output in zip(batches, outputs):
        log_probs = log_softmax(output["mlm_logits"])
        w = batch["masked_lm_weights"].astype(np.float64)
        per_position = -np.take_along_axis(log_probs, batch["masked_lm_ids"][..., None], -1)[..., 0]
        batch_losses.append(np.sum(w * per_position) / (np.sum(w) + 1e-5))
    if use_next_sentence:
        nsp_log_probs = np.concatenate([log_softmax(o["nsp_logits"]) for o in outputs])
        labels = np.concatenate([b["next_sentence_labels"].reshape(-1) for b in batches])
        nsp_loss = -nsp_log_probs[np.arange(len(labels)), labels]
        results["next_sentence_accuracy"] = np.mean(nsp_log_probs.argmax(-1) == labels)
        results["next_sentence_loss"] = np.mean(nsp_loss)
        batch_losses = [loss + np.mean(nsp_loss[i * len(b["next_sentence_labels"]):(i + 1) * len(
            b["next_sentence_labels"])]) for i, (loss, b) in enumerate(zip(batch_losses, batches))]
    results["loss"] = np.mean(batch_losses)
    return results


def model_and_batches(use_next_sentence=True):
    """A random tiny model and 3 batches of 8 whose labels it gets right where the test says: the real masked
    positions alternately right and wrong, every padding entry (weight 0) right, every other NSP label right. A
    random model alone would score ~1/64, where weighting mistakes do not show."""
    keras.utils.set_random_seed(11)
    model = BertPretrainer(CONFIG, use_next_sentence=use_next_sentence)
    # A spread output bias makes the per-position losses range widely (a fresh model's are all near log 64), so
    # averaging them the wrong way (per batch, then over batches: 0.4% off here) fails the comparison.
    model.masked_lm.output_bias.assign(np.random.default_rng(11).normal(0, 3, VOCAB_SIZE).astype(np.float32))
    batches = feature_batches(3, 8, SEQ, PRED, seed=6, full_predictions=False)  # 1 to 4 real predictions each
    outputs = []
    for batch in batches:
        output = {k: v.numpy() for k, v in model({k: tf.constant(v) for k, v in batch.items()},
                                                  training=False).items()}
        predicted = output["mlm_logits"].argmax(-1)
        real = batch["masked_lm_weights"] > 0
        right = ~real | (np.cumsum(real, axis=1) % 2 == 1)  # 1st and 3rd real prediction of a row, and padding
        batch["masked_lm_ids"] = np.where(right, predicted, (predicted + 1) % VOCAB_SIZE).astype(np.int32)
        nsp = output["nsp_logits"].argmax(-1)
        batch["next_sentence_labels"] = np.where(np.arange(8) % 2 == 0, nsp, 1 - nsp)[:, None].astype(np.int32)
        outputs.append(output)
    return model, batches, outputs


def dataset(batches):
    return tf.data.Dataset.from_tensor_slices({k: np.stack([b[k] for b in batches]) for k in batches[0]})


@pytest.mark.parametrize("max_steps", [None, 2])
def test_evaluate_matches_the_original_metric_fn(max_steps):
    model, batches, outputs = model_and_batches()
    results = evaluate(model, dataset(batches), max_steps=max_steps)
    used = 3 if max_steps is None else max_steps
    expected = original_metric_fn(batches[:used], outputs[:used])
    assert set(results) == set(expected) | {"eval_batches"} and results["eval_batches"] == used
    for name, value in expected.items():
        np.testing.assert_allclose(results[name], value, rtol=1e-5, err_msg=name)

    # The numbers the labels were built to give: weighted masked-LM accuracy counts the real positions only
    # (ceil(n/2) of a row's n right); counting the padding entries, which are all right, would give far more.
    weights = np.stack([b["masked_lm_weights"] for b in batches[:used]])
    real_per_row = weights.sum(-1).astype(int)
    assert results["masked_lm_accuracy"] == pytest.approx(np.sum((real_per_row + 1) // 2) / np.sum(real_per_row))
    unweighted = np.mean([(o["mlm_logits"].argmax(-1) == b["masked_lm_ids"]).mean()
                          for o, b in zip(outputs[:used], batches[:used])])
    assert unweighted > results["masked_lm_accuracy"] + 0.1
    assert results["next_sentence_accuracy"] == 0.5


def test_evaluate_without_next_sentence_reports_masked_lm_only():
    model, batches, outputs = model_and_batches(use_next_sentence=False)
    results = evaluate(model, dataset(batches))
    expected = original_metric_fn(batches, outputs, use_next_sentence=False)
    assert set(results) == {"masked_lm_accuracy", "masked_lm_loss", "loss", "eval_batches"}
    for name, value in expected.items():
        np.testing.assert_allclose(results[name], value, rtol=1e-5, err_msg=name)

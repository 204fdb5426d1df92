"""The original pre-training losses and metrics (`get_masked_lm_output`, `get_next_sentence_output`)."""

from keras import ops

# The original adds 1e-5 to the weight sum so that a batch with no predictions does not divide by zero.
MLM_DENOMINATOR_EPSILON = 1e-5


def masked_lm_loss(logits, label_ids, label_weights):
    """sum(w * -log p(label)) / (sum(w) + 1e-5), in float32. logits [B, P, V]; ids, weights [B, P]."""
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    label_ids = ops.cast(label_ids, "int32")
    per_example = -ops.sum(log_probs * ops.one_hot(label_ids, ops.shape(logits)[-1], dtype="float32"), axis=-1)
    weights = ops.cast(label_weights, "float32")
    return ops.sum(weights * per_example) / (ops.sum(weights) + MLM_DENOMINATOR_EPSILON)


def next_sentence_loss(logits, labels):
    """Mean cross-entropy of the [B, 2] logits against labels [B] or [B, 1]."""
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    labels = ops.reshape(ops.cast(labels, "int32"), (-1,))
    return ops.mean(-ops.sum(log_probs * ops.one_hot(labels, 2, dtype="float32"), axis=-1))


def masked_lm_accuracy(logits, label_ids, label_weights):
    """Weighted accuracy of argmax predictions at the masked positions (padding has weight 0)."""
    correct = ops.cast(ops.equal(ops.argmax(logits, axis=-1), ops.cast(label_ids, "int32")), "float32")
    weights = ops.cast(label_weights, "float32")
    return ops.sum(weights * correct) / ops.maximum(ops.sum(weights), MLM_DENOMINATOR_EPSILON)


def next_sentence_accuracy(logits, labels):
    labels = ops.reshape(ops.cast(labels, "int32"), (-1,))
    return ops.mean(ops.cast(ops.equal(ops.argmax(logits, axis=-1), labels), "float32"))


def pretraining_losses(outputs, features, use_next_sentence=True):
    """All losses and metrics of one batch as a dict of float32 scalars.

    `loss` = masked_lm_loss + next_sentence_loss (just masked_lm_loss when `use_next_sentence` is False,
    the RoBERTa-style option). `outputs` holds `mlm_logits`/`nsp_logits`; `features` holds
    `masked_lm_ids`, `masked_lm_weights` and `next_sentence_labels`.
    """
    mlm_logits = outputs["mlm_logits"]
    ids, weights = features["masked_lm_ids"], features["masked_lm_weights"]
    result = {
        "masked_lm_loss": masked_lm_loss(mlm_logits, ids, weights),
        "masked_lm_accuracy": masked_lm_accuracy(mlm_logits, ids, weights),
    }
    result["loss"] = result["masked_lm_loss"]
    if use_next_sentence:
        nsp_logits, labels = outputs["nsp_logits"], features["next_sentence_labels"]
        result["next_sentence_loss"] = next_sentence_loss(nsp_logits, labels)
        result["next_sentence_accuracy"] = next_sentence_accuracy(nsp_logits, labels)
        result["loss"] = result["loss"] + result["next_sentence_loss"]
    return result

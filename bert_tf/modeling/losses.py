"""The original pre-training losses and metrics (`get_masked_lm_output`, `get_next_sentence_output`), the one owner
of their formulas: the training step takes a batch's means (`pretraining_losses`), the evaluation adds the weighted
sums behind them over a held-out set (`masked_lm_sums`, `next_sentence_sums`)."""

from keras import ops

# The original adds 1e-5 to the weight sum so that a batch with no predictions does not divide by zero.
MLM_DENOMINATOR_EPSILON = 1e-5


def masked_lm_loss(logits, label_ids, label_weights):
    """sum(w * -log p(label)) / (sum(w) + 1e-5), in float32. logits [B, P, V]; ids, weights [B, P].

    -log p(label) is the original's -sum(one_hot * log_softmax), computed as logsumexp - label logit by the
    backend's fused sparse cross-entropy: the same math without materialising a [B, P, V] one-hot, so a small
    model's step is faster (docs/measurements.md, "Inside the step"). A label outside [0, V) is an error here,
    where the one-hot silently gave 0.
    """
    weights = ops.cast(label_weights, "float32")
    return masked_lm_loss_of_sums(ops.sum(weights * sparse_cross_entropy(logits, label_ids)), ops.sum(weights))


def masked_lm_loss_of_sums(loss_sum, weight_sum):
    """The training's masked-LM loss from its sums: the original adds 1e-5 to the weights' sum."""
    return loss_sum / (weight_sum + MLM_DENOMINATOR_EPSILON)


def masked_lm_sums(logits, label_ids, label_weights):
    """The weighted sums behind the masked-LM loss and accuracy, float32 scalars: `correct` (sum of w where
    `first_argmax` is the label), `loss` (sum of w * -log p(label)) and `weight` (sum of w). They add up over
    replicas and batches, as the original's eval metrics do."""
    weights = ops.cast(label_weights, "float32")
    correct = ops.cast(ops.equal(first_argmax(logits), ops.cast(label_ids, "int32")), "float32")
    return {"correct": ops.sum(weights * correct), "loss": ops.sum(weights * sparse_cross_entropy(logits, label_ids)),
            "weight": ops.sum(weights)}


def next_sentence_sums(logits, labels, weights=None):
    """The sums behind the next-sentence loss and accuracy, float32 scalars: `correct`, `loss` (cross-entropy)
    and `count`, over the instances: the [B, 2] logits against labels [B] or [B, 1], or for packed rows the
    [B, K, 2] logits against labels [B, K] with `weights` [B, K] (1 for an instance, 0 for an empty slot)."""
    if weights is None:
        labels = ops.reshape(labels, (-1,))
        weights = ops.ones(ops.shape(labels), "float32")
    weights = ops.cast(weights, "float32")
    correct = ops.cast(ops.equal(first_argmax(logits), ops.cast(labels, "int32")), "float32")
    return {"correct": ops.sum(weights * correct), "loss": ops.sum(weights * sparse_cross_entropy(logits, labels)),
            "count": ops.sum(weights)}


def next_sentence_loss(logits, labels, weights=None):
    """Mean cross-entropy of the [B, 2] logits against labels [B] or [B, 1]; for packed rows, of the [B, K, 2]
    logits against labels [B, K], over the instances (`weights` [B, K]: 1 for an instance, 0 for an empty slot)."""
    sums = next_sentence_sums(logits, labels, weights)
    return sums["loss"] / ops.maximum(sums["count"], 1.0)


def sparse_cross_entropy(logits, labels):
    """-log_softmax(logits)[label] in float32 along the last axis; labels have the logits' leading shape."""
    return ops.sparse_categorical_crossentropy(ops.cast(labels, "int32"), ops.cast(logits, "float32"),
                                               from_logits=True)


def first_argmax(x):
    """The index of the largest value along the last axis, the first one on ties (-0.0 == +0.0): what the
    original's tf.argmax gives. Written as min(where(x == max, index, n)): two reductions that XLA fuses, where
    keras' argmax adds four passes over the [B, P, V] logits to order -0.0 below +0.0, and top_k(k=1) is slow
    under XLA (timings in docs/measurements.md, "Inside the step")."""
    x = ops.cast(x, "float32")
    size = ops.shape(x)[-1]
    is_max = ops.equal(x, ops.max(x, axis=-1, keepdims=True))
    return ops.min(ops.where(is_max, ops.arange(size, dtype="int32"), size), axis=-1)


def masked_lm_accuracy(logits, label_ids, label_weights):
    """Weighted accuracy of argmax predictions at the masked positions (padding has weight 0)."""
    sums = masked_lm_sums(logits, label_ids, label_weights)
    return sums["correct"] / ops.maximum(sums["weight"], MLM_DENOMINATOR_EPSILON)


def next_sentence_accuracy(logits, labels, weights=None):
    """The share of instances whose argmax is the label (weights as in `next_sentence_loss`)."""
    sums = next_sentence_sums(logits, labels, weights)
    return sums["correct"] / ops.maximum(sums["count"], 1.0)


def pretraining_losses(outputs, features, use_next_sentence=True):
    """All losses and metrics of one batch as a dict of float32 scalars.

    `loss` = masked_lm_loss + next_sentence_loss (just masked_lm_loss when `use_next_sentence` is False,
    the RoBERTa-style option). `outputs` holds `mlm_logits`/`nsp_logits`; `features` holds
    `masked_lm_ids`, `masked_lm_weights` and `next_sentence_labels` (packed rows: and `next_sentence_weights`,
    so that the next-sentence terms are per instance, as in a batch of the same instances unpacked).
    """
    mlm = masked_lm_sums(outputs["mlm_logits"], features["masked_lm_ids"], features["masked_lm_weights"])
    result = {"masked_lm_loss": masked_lm_loss_of_sums(mlm["loss"], mlm["weight"]),
              "masked_lm_accuracy": mlm["correct"] / ops.maximum(mlm["weight"], MLM_DENOMINATOR_EPSILON)}
    result["loss"] = result["masked_lm_loss"]
    if use_next_sentence:
        nsp = next_sentence_sums(outputs["nsp_logits"], features["next_sentence_labels"],
                                 features.get("next_sentence_weights"))
        result["next_sentence_loss"] = nsp["loss"] / ops.maximum(nsp["count"], 1.0)
        result["next_sentence_accuracy"] = nsp["correct"] / ops.maximum(nsp["count"], 1.0)
        result["loss"] = result["loss"] + result["next_sentence_loss"]
    return result

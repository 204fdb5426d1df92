"""The synthetic pre-training batch every step benchmark feeds (numpy only, so jax and TensorFlow scripts share it):
[CLS] A [SEP] B [SEP] with random ids above the special and unused ids, no padding, sorted distinct predicted
positions that are never [CLS] or a [SEP].

Example:
>>> batch = synthetic_batch(30522, 2, 16, 3)
>>> batch["input_word_ids"].shape, batch["masked_lm_weights"].dtype.name
((2, 16), 'float32')
"""

import numpy as np

FIRST_TOKEN_ID = 999  # above [PAD]/[UNK]/[CLS]/[SEP]/[MASK] and the unused ids of the uncased vocab


def synthetic_batch(vocab_size, batch, seq_length, num_predictions, seed=0):
    """{feature name: array} in the model's feature names: int32, the masked-LM weights float32."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(FIRST_TOKEN_ID, vocab_size, (batch, seq_length))
    half = seq_length // 2
    ids[:, 0], ids[:, half - 1], ids[:, -1] = 101, 102, 102
    types = np.zeros((batch, seq_length))
    types[:, half:] = 1
    candidates = [p for p in range(1, seq_length - 1) if p != half - 1]
    positions = np.sort(np.stack([rng.choice(candidates, num_predictions, replace=False) for _ in range(batch)]), 1)
    features = {"input_word_ids": ids, "input_mask": np.ones((batch, seq_length)), "input_type_ids": types,
                "masked_lm_positions": positions,
                "masked_lm_ids": rng.integers(FIRST_TOKEN_ID, vocab_size, (batch, num_predictions)),
                "masked_lm_weights": np.ones((batch, num_predictions)),
                "next_sentence_labels": rng.integers(0, 2, (batch, 1))}
    return {k: v.astype(np.float32 if k == "masked_lm_weights" else np.int32) for k, v in features.items()}

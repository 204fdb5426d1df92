"""The model-FLOPs convention of the MFU estimate, term by term."""

import pytest

from bert_tf.accelerators.flops import training_flops_per_sequence
from bert_tf.config import BertConfig


def test_bert_base_flops_per_sequence_by_the_stated_convention():
    config = BertConfig.preset("base")
    h, i, layers, v, t, p = 768, 3072, 12, 30522, 128, 20
    dense = 6 * layers * (4 * h * h + 2 * h * i) * t  # 6 x encoder matmul weights x tokens
    attention = 12 * layers * t * t * h              # QK^T and AV, forward 4T^2H, x3 for training
    masked_lm = 6 * p * (h * h + h * v)               # only at the predicted positions
    pooler_nsp = 6 * (h * h + 2 * h)
    assert training_flops_per_sequence(config, t, p) == dense + attention + masked_lm + pooler_nsp
    assert training_flops_per_sequence(config, t, p) / 1e9 == pytest.approx(69.93, abs=0.01)
    assert training_flops_per_sequence(config, t, p, use_next_sentence=False) == dense + attention + masked_lm
    # Phase 2 of the paper's recipe: 512 tokens, 80 predictions; attention grows with T^2.
    assert training_flops_per_sequence(config, 512, 80) / training_flops_per_sequence(config, t, p) == pytest.approx(
        4.31, abs=0.01)


"""The original schedule and AdamWeightDecay (and the LAMB option) against NumPy implementations of the formulas."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.optimizers.adam_weight_decay import AdamWeightDecay
from bert_tf.optimizers.lamb import Lamb
from bert_tf.optimizers.optimization import create_optimizer
from bert_tf.optimizers.schedule import WarmupPolynomialDecay
from bert_tf.training.recipe import load_recipe
from helpers import tiny_config

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

EXCLUDE = ("LayerNorm", "layer_norm", "bias")


def paper_lr(step, lr=1e-4, warmup=10_000, total=1_000_000):
    """The original create_optimizer: warmup lr * step / warmup, else polynomial (power 1) decay from step 0."""
    if step < warmup:
        return lr * step / warmup
    return lr * (1.0 - min(step, total) / total)


@pytest.mark.parametrize("step", [0, 5_000, 10_000, 500_000, 1_000_000])
def test_paper_schedule_matches_the_formula(step):
    optimizer = create_optimizer(load_recipe("bert_base_paper"))
    schedule = optimizer._learning_rate
    assert isinstance(schedule, WarmupPolynomialDecay)
    np.testing.assert_allclose(float(schedule(step)), paper_lr(step), rtol=1e-6, atol=1e-12)


def test_schedule_edges():
    schedule = WarmupPolynomialDecay(1e-4, num_train_steps=1_000_000, num_warmup_steps=10_000)
    # The jump at the end of warmup: lr * 9999/10000 just before, lr * (1 - 10k/1M) at it.
    np.testing.assert_allclose(float(schedule(9_999)), 1e-4 * 0.9999, rtol=1e-6)
    np.testing.assert_allclose(float(schedule(10_000)), 1e-4 * 0.99, rtol=1e-6)
    assert float(schedule(2_000_000)) == 0.0
    assert float(WarmupPolynomialDecay(1e-3, 100)(0)) == pytest.approx(1e-3)  # no warmup: full rate at step 0
    with pytest.raises(ValueError, match="num_warmup_steps=200 must lie in"):
        WarmupPolynomialDecay(1e-3, 100, 200)


def tiny_model():
    keras.utils.set_random_seed(3)
    return BertPretrainer(tiny_config(vocab_size=20, hidden_size=8, num_hidden_layers=1, intermediate_size=16,
                                      max_position_embeddings=16))


def random_grads(variables, step, scale):
    rng = np.random.default_rng(step)
    return [(rng.standard_normal(v.shape) * scale).astype(np.float32) for v in variables]


def numpy_clip(grads, clip_norm=1.0):
    """tf.clip_by_global_norm: g * clip_norm / max(global_norm, clip_norm)."""
    norm = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grads))
    return [g * np.float32(clip_norm / max(norm, clip_norm)) for g in grads]


def decayed(path):
    return not any(re.search(p, path) for p in EXCLUDE)


def numpy_adam_weight_decay(params, grads, m, v, lr, paths, wd=0.01, b1=0.9, b2=0.999, eps=1e-6):
    """The original AdamWeightDecayOptimizer.apply_gradients, in float32."""
    f = np.float32
    for i, (p, g) in enumerate(zip(params, grads)):
        m[i] = f(b1) * m[i] + f(1 - b1) * g
        v[i] = f(b2) * v[i] + f(1 - b2) * g * g
        update = m[i] / (np.sqrt(v[i]) + f(eps))
        if decayed(paths[i]):
            update = update + f(wd) * p
        params[i] = p - f(lr) * update


def numpy_lamb(params, grads, m, v, lr, paths, t, wd=0.01, b1=0.9, b2=0.999, eps=1e-6):
    """NVIDIA/MLPerf LAMB: bias-corrected Adam + decoupled decay, scaled by ||p|| / ||update|| (excluded: 1)."""
    f = np.float32
    for i, (p, g) in enumerate(zip(params, grads)):
        m[i] = f(b1) * m[i] + f(1 - b1) * g
        v[i] = f(b2) * v[i] + f(1 - b2) * g * g
        update = (m[i] / f(1 - b1 ** t)) / (np.sqrt(v[i] / f(1 - b2 ** t)) + f(eps))
        ratio = 1.0
        if decayed(paths[i]):
            update = update + f(wd) * p
            p_norm, u_norm = np.linalg.norm(p), np.linalg.norm(update)
            ratio = p_norm / u_norm if p_norm > 0 and u_norm > 0 else 1.0
        params[i] = p - f(lr) * f(ratio) * update


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_optimizer_steps_match_numpy(name):
    model = tiny_model()
    variables = model.trainable_variables
    paths = [v.path for v in variables]
    schedule = WarmupPolynomialDecay(1e-2, num_train_steps=10, num_warmup_steps=2)
    cls = AdamWeightDecay if name == "adamw" else Lamb
    optimizer = cls(learning_rate=schedule, weight_decay_rate=0.01, global_clipnorm=1.0)
    params = [v.numpy().copy() for v in variables]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    # Steps 0 and 1 are in warmup (lr 0 then 5e-3); gradient norms above and below the clip threshold.
    for step, scale in enumerate([3.0, 0.01, 1.0, 0.2]):
        grads = random_grads(variables, step, scale)
        optimizer.apply([tf.constant(g) for g in grads], variables)
        lr = float(schedule(step))
        if name == "adamw":
            numpy_adam_weight_decay(params, numpy_clip(grads), m, v, lr, paths)
        else:
            numpy_lamb(params, numpy_clip(grads), m, v, lr, paths, t=step + 1)
        for path, expected, variable in zip(paths, params, variables):
            np.testing.assert_allclose(variable.numpy(), expected, rtol=2e-5, atol=2e-7,
                                       err_msg=f"{name} step {step}: {path}")
    assert int(optimizer.iterations.numpy()) == 4


def test_weight_decay_exclusions_follow_the_tf1_paths():
    model = tiny_model()
    optimizer = AdamWeightDecay(weight_decay_rate=0.01)
    optimizer.build(model.trainable_variables)
    excluded = sorted(v.path for v in model.trainable_variables if not optimizer.uses_weight_decay(v))
    assert "bert/embeddings/LayerNorm/gamma" in excluded
    assert "cls/predictions/output_bias" in excluded
    assert "bert/encoder/layer_0/attention/self/query/bias" in excluded
    assert all("LayerNorm" in p or p.endswith("bias") for p in excluded)
    decayed_paths = {v.path for v in model.trainable_variables} - set(excluded)
    assert {"bert/embeddings/word_embeddings", "cls/seq_relationship/output_weights",
            "bert/encoder/layer_0/attention/self/query/kernel"} <= decayed_paths
    # 1 layer: LayerNorm gamma/beta of the embeddings, 2 in the block, the MLM transform (8 variables); biases of
    # query/key/value/attention output/intermediate/output, pooler, MLM transform, MLM output, NSP output (10).
    assert len(excluded) == 8 + 10


def test_optimizer_config_round_trip():
    optimizer = AdamWeightDecay(learning_rate=WarmupPolynomialDecay(1e-4, 100, 10), global_clipnorm=1.0,
                                aggregate_gradients=False)
    restored = AdamWeightDecay.from_config(optimizer.get_config())
    assert restored.epsilon == 1e-6 and restored.weight_decay_rate == 0.01 and not restored.aggregate_gradients
    assert restored.exclude_from_weight_decay_patterns == EXCLUDE
    assert float(restored._learning_rate(50)) == pytest.approx(float(optimizer._learning_rate(50)))

"""Fine-tuning with Keras fit: the native task models (trained with the fine-tuning optimizer, saved as .keras,
exported for serving) and the optimizer."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.finetuning import BertClassifier, BertSpanQA, BertTokenClassifier, create_finetuning_optimizer
from bert_tf.serving import export_classifier, export_span_qa, non_core_ops

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

XENT = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
TOLERANCE = 1e-5


def pair_task(seed=0, count=64, length=12, vocab_size=64):
    """[CLS] A [SEP] B [SEP] with padding; label 1 when token 7 appears in B (needs both segments' ids)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(10, vocab_size, (count, length)).astype(np.int32)
    lengths = rng.integers(6, length + 1, count)
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int32)
    split = lengths // 2
    types = ((np.arange(length)[None, :] > split[:, None]) * mask).astype(np.int32)
    labels = rng.integers(0, 2, count).astype(np.int32)
    for i in range(count):
        ids[i, 0], ids[i, split[i]], ids[i, lengths[i] - 1] = 2, 3, 3
        if labels[i]:
            ids[i, rng.integers(split[i] + 1, lengths[i] - 1)] = 7
    return {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": types}, labels


def arrays(layer_weights):
    return [np.array(keras.ops.convert_to_numpy(w)) for w in layer_weights]


def moved(before, after):
    return max(float(np.max(np.abs(a - b))) for a, b in zip(before, after))


def reloaded_from_keras_file(model, path, x):
    """`model` saved as .keras and loaded back: same class, same inference outputs."""
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert type(reloaded) is type(model)
    for got, want in zip(keras.tree.flatten(reloaded(x)), keras.tree.flatten(model(x))):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got), keras.ops.convert_to_numpy(want))
    return reloaded


def check_served(export_dir, x, want):
    """The exported SavedModel, loaded back, gives `want` (the Keras outputs) to 1e-5 on core TensorFlow ops."""
    loaded = tf.saved_model.load(export_dir)
    got = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in x.items()})
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        assert got[name].shape == value.shape, name
        assert np.max(np.abs(got[name].numpy().astype(np.float64) - value)) <= TOLERANCE, name
    assert non_core_ops(export_dir) == []
    return loaded


def test_classifier_on_pairs_trains_saves_as_keras_and_round_trips_its_config(tiny_config, tmp_path):
    keras.utils.set_random_seed(0)
    x, y = pair_task()
    model = BertClassifier(tiny_config, num_classes=2)
    model.compile(optimizer=create_finetuning_optimizer(3e-3, num_train_steps=64), loss=XENT, metrics=["accuracy"])
    first = model.evaluate(x, y, verbose=0, return_dict=True)
    before = arrays(model.encoder.trainable_weights)
    model.fit(x, y, batch_size=16, epochs=16, verbose=0)
    after = model.evaluate(x, y, verbose=0, return_dict=True)
    # Whether token 7 is in segment B: learnt only through attention across the pair and input_type_ids.
    assert after["loss"] < first["loss"] - 0.3 and after["accuracy"] >= 0.9, (first, after)
    assert moved(before, arrays(model.encoder.trainable_weights)) > 1e-3
    path = str(tmp_path / "classifier.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert isinstance(reloaded, BertClassifier) and reloaded.num_classes == 2
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(reloaded(x)), keras.ops.convert_to_numpy(model(x)))
    rebuilt = BertClassifier.from_config(model.get_config())
    assert rebuilt.encoder.config == model.encoder.config and rebuilt.dropout_rate == 0.1
    logits = [keras.ops.convert_to_numpy(model(x, training=True)) for _ in range(2)]
    assert np.max(np.abs(logits[0] - logits[1])) > 1e-4  # dropout in training
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(model(x)), keras.ops.convert_to_numpy(model(x)))


def test_token_classifier_learns_tags_ignores_padding_and_serves_per_token_probabilities(tiny_config, tmp_path):
    keras.utils.set_random_seed(1)
    x, _ = pair_task(seed=1)
    tags = (x["input_word_ids"] % 3).astype(np.int32)
    model = BertTokenClassifier(tiny_config, num_classes=3)
    model.compile(optimizer=create_finetuning_optimizer(1e-2, num_train_steps=32), loss=XENT)
    first = model.evaluate(x, tags, sample_weight=x["input_mask"], verbose=0)
    model.fit(x, tags, sample_weight=x["input_mask"], batch_size=16, epochs=8, verbose=0)
    last = model.evaluate(x, tags, sample_weight=x["input_mask"], verbose=0)
    # The whole schedule ran: 32 steps, the learning rate warmed up and decayed back to 0.
    assert int(model.optimizer.iterations) == 32 and float(model.optimizer.learning_rate) == 0.0
    assert keras.ops.convert_to_numpy(model(x)).shape == (64, 12, 3)
    assert last < first - 0.2, (first, last)
    # Padding carries no weight: random labels there leave the loss unchanged.
    noisy = np.where(x["input_mask"] == 1, tags, np.random.default_rng(0).integers(0, 3, tags.shape))
    assert model.evaluate(x, noisy, sample_weight=x["input_mask"], verbose=0) == pytest.approx(last, rel=1e-5)

    reloaded = reloaded_from_keras_file(model, str(tmp_path / "tagger.keras"), x)
    export_dir = export_classifier(reloaded, str(tmp_path / "token_classifier" / "1"), ["zero", "one", "two"])
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(model(x), -1))
    loaded = check_served(export_dir, x, {"probabilities": probabilities,
                                          "label_ids": probabilities.argmax(-1).astype(np.int32)})
    with open(loaded.labels_file.asset_path.numpy().decode()) as f:
        assert f.read() == "zero\none\ntwo\n"
    # The served tags are what training taught: nearly every real token gets its tag.
    served = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in x.items()})["label_ids"].numpy()
    real = x["input_mask"] == 1
    assert np.mean(served[real] == tags[real]) >= 0.9


def test_span_qa_learns_start_and_end_with_the_original_mean_loss_and_serves_its_logits(tiny_config, tmp_path):
    keras.utils.set_random_seed(2)
    x, _ = pair_task(seed=2)
    rng = np.random.default_rng(2)
    lengths = x["input_mask"].sum(1)
    start = rng.integers(1, lengths - 2)
    end = start + 1
    x["input_word_ids"][np.arange(64), start] = 8
    x["input_word_ids"][np.arange(64), end] = 9
    y = {"start_logits": start.astype(np.int32), "end_logits": end.astype(np.int32)}
    model = BertSpanQA(tiny_config)
    model.compile(optimizer=create_finetuning_optimizer(1e-2, num_train_steps=40),
                  loss={"start_logits": XENT, "end_logits": XENT},
                  loss_weights={"start_logits": 0.5, "end_logits": 0.5})
    first = model.evaluate(x, y, verbose=0, return_dict=True)
    assert first["loss"] == pytest.approx(0.5 * (first["start_logits_loss"] + first["end_logits_loss"]), rel=1e-4)
    model.fit(x, y, batch_size=16, epochs=10, verbose=0)
    last = model.evaluate(x, y, verbose=0, return_dict=True)
    assert int(model.optimizer.iterations) == 40 and float(model.optimizer.learning_rate) == 0.0
    assert last["loss"] < first["loss"] - 0.5, (first, last)
    outputs = {k: keras.ops.convert_to_numpy(v) for k, v in model(x).items()}
    assert outputs["start_logits"].shape == (64, 12)

    reloaded = reloaded_from_keras_file(model, str(tmp_path / "qa.keras"), x)
    export_dir = export_span_qa(reloaded, str(tmp_path / "span_qa" / "1"))
    loaded = check_served(export_dir, x, outputs)
    # The input checks of the encoder: a sequence past max_position_embeddings fails naming the limit.
    too_long = {k: np.concatenate([v, v, v], axis=1) for k, v in x.items()}
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings=32"):
        loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in too_long.items()})


# The trainable variables of the original run_classifier.py's model (TF1 names, 2 layers) and its head.
ORIGINAL_ENCODER = (
    [f"bert/embeddings/{n}" for n in ("word_embeddings", "token_type_embeddings", "position_embeddings",
                                      "LayerNorm/gamma", "LayerNorm/beta")]
    + [f"bert/encoder/layer_{i}/{scope}/{p}" for i in range(2)
       for scope in ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense",
                     "intermediate/dense", "output/dense") for p in ("kernel", "bias")]
    + [f"bert/encoder/layer_{i}/{scope}/LayerNorm/{p}" for i in range(2) for scope in ("attention/output", "output")
       for p in ("gamma", "beta")]
    + ["bert/pooler/dense/kernel", "bert/pooler/dense/bias"])
ORIGINAL_HEAD = {"classifier/logits/kernel": "output_weights", "classifier/logits/bias": "output_bias"}


def test_optimizer_is_the_originals_adam_weight_decay_on_warmup_and_linear_decay(tiny_config):
    optimizer = create_finetuning_optimizer(1e-3, num_train_steps=100)  # 10 warmup steps
    schedule = optimizer._learning_rate
    assert [round(float(schedule(s)), 7) for s in (0, 5, 10, 55, 100)] == [0.0, 5e-4, 9e-4, 4.5e-4, 0.0]
    assert optimizer.epsilon == 1e-6 and optimizer.global_clipnorm == 1.0

    model = BertClassifier(tiny_config, num_classes=2)
    model({k: np.ones((1, 4), np.int32) for k in ("input_word_ids", "input_mask", "input_type_ids")})
    optimizer = create_finetuning_optimizer(0.5, num_train_steps=10, num_warmup_steps=0, weight_decay_rate=0.1)
    optimizer.build(model.trainable_variables)
    ours = {ORIGINAL_HEAD.get(v.path, v.path): optimizer.uses_weight_decay(v) for v in model.trainable_variables}
    # The original's rule on the original's names: decay unless "LayerNorm", "layer_norm" or "bias" is in the name.
    original = {name: not re.search("LayerNorm|layer_norm|bias", name)
                for name in ORIGINAL_ENCODER + list(ORIGINAL_HEAD.values())}
    assert ours == original
    assert sum(original.values()) == 3 + 2 * 6 + 1 + 1  # 3 embeddings, 6 kernels a layer, pooler, output weights

    # One step, gradient 1 on the biases and 0 elsewhere: a decayed weight shrinks by lr * rate = 5%; a bias moves
    # by lr * m / (sqrt(v) + eps), about 0.5 * 0.1 / sqrt(0.001) = 1.58 without Adam's bias correction (Keras
    # AdamW: about 0.5).
    before = {v.path: keras.ops.convert_to_numpy(v) for v in model.trainable_variables}
    # Clipped to global norm 1 first: each bias gradient becomes 1 / sqrt(number of bias entries).
    gradient = 1 / np.sqrt(sum(b.size for path, b in before.items() if path.endswith("bias")))
    optimizer.apply_gradients([(keras.ops.ones_like(v) if v.path.endswith("bias") else keras.ops.zeros_like(v), v)
                               for v in model.trainable_variables])
    for variable in model.trainable_variables:
        after, start = keras.ops.convert_to_numpy(variable), before[variable.path]
        if variable.path.endswith("bias"):
            step = 0.5 * 0.1 * gradient / (np.sqrt(0.001) * gradient + 1e-6)
            np.testing.assert_allclose(start - after, step, rtol=1e-4)
        elif ours[ORIGINAL_HEAD.get(variable.path, variable.path)]:
            np.testing.assert_allclose(after, 0.95 * start, rtol=1e-5, atol=1e-7)
        else:
            np.testing.assert_array_equal(after, start)

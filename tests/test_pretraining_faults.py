"""run_pretraining on real TFRecords, in process: NaN guard, a failed save, exact resume, --init_checkpoint, and the
options reaching the loop that trains."""

import dataclasses
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import model_dir as model_dir_lib
from bert_tf.errors import InputError
from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import pretraining_dataset
from bert_tf.model_dir import load_pretrainer
from bert_tf.optimizers.lamb import Lamb
from bert_tf.records.schema import read_schema
from bert_tf.training import pretraining
from bert_tf.training.evaluation import evaluate
from bert_tf.training.pretraining import NonFiniteLossError, run_pretraining
from bert_tf.training.recipe import Recipe
from bert_tf.training.training_log import read_history
from helpers import tiny_config, tiny_model_section
from pretraining_records import write_records, write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

SEQ, PRED = 16, 4


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("records")
    return {"train": write_records(root / "train.tfrecord", 256, SEQ, PRED, seed=0),
            "eval": write_records(root / "eval.tfrecord", 32, SEQ, PRED, seed=1),
            "vocab": write_vocab(root / "vocab.txt")}


def tiny_recipe(data, **overrides):
    recipe = Recipe.from_dict({
        "name": "tiny_test",
        "model": tiny_model_section(max_position_embeddings=SEQ),
        "vocab_file": data["vocab"], "train_batch_size": 8, "num_train_steps": 20, "num_warmup_steps": 2,
        "learning_rate": 5e-3, "save_checkpoints_steps": 10, "iterations_per_loop": 5,
        "phases": [{"name": "seq16", "num_steps": 20, "max_seq_length": SEQ, "max_predictions_per_seq": PRED,
                    "input_file": data["train"]}],
        "eval": {"eval_batch_size": 8, "max_eval_steps": 2}})
    paths = {"input_file": "phases.input_file", "eval_input_file": "eval.input_file", "optimizer": "optimizer.name",
             "dynamic_masking": "dynamic_masking.enabled"}
    return recipe.override({paths.get(key, key): value for key, value in overrides.items()})


def weights(model_dir):
    return {v.path: v.numpy() for v in load_pretrainer(model_dir).trainable_variables}


@pytest.fixture
def built(monkeypatch):
    """What run_pretraining builds, recorded: its `Trainer`s and its datasets (with the `InputSpec` and input context
    they were built from), so a test can look at the loop, model, optimizer and batches the run really trained with."""
    record = {"trainers": [], "datasets": []}

    class RecordingTrainer(pretraining.Trainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            record["trainers"].append(self)

    real_dataset = pretraining.pretraining_dataset

    def recording_dataset(spec, input_context=None):
        dataset = real_dataset(spec, input_context)
        record["datasets"].append((spec, input_context, dataset))
        return dataset

    monkeypatch.setattr(pretraining, "Trainer", RecordingTrainer)
    monkeypatch.setattr(pretraining, "pretraining_dataset", recording_dataset)
    record["real_dataset"] = real_dataset
    return record


def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(data, tmp_path):
    model_dir = str(tmp_path / "run")
    run_pretraining(tiny_recipe(data, num_train_steps=10), model_dir, peak_tflops=1.0)
    good = weights(model_dir)
    with pytest.raises(NonFiniteLossError, match=r"The training loss became (nan|inf) at step 1[01] \(phase seq16\);"
                                                 r" stopped without saving: the latest checkpoint is still ckpt-10"):
        run_pretraining(tiny_recipe(data, learning_rate=1e30), model_dir, peak_tflops=1.0, accept_recipe_change=True)
    assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-10")
    assert not [f for f in os.listdir(model_dir) if f.startswith("ckpt-2")]
    restored = weights(model_dir)
    for path, value in good.items():
        np.testing.assert_array_equal(restored[path], value)


def test_failed_save_keeps_the_previous_checkpoint_and_resume_is_exact(data, tmp_path):
    clean_dir = str(tmp_path / "clean")
    result = run_pretraining(tiny_recipe(data, eval_input_file=data["eval"]), clean_dir, peak_tflops=1.0)
    assert result.completed and result.step == 20 and result.checkpoint.endswith("ckpt-20")
    assert set(result.eval_results) == {"masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                                        "next_sentence_loss", "loss", "eval_batches"}

    # A directory where the second checkpoint's index file goes: that save fails half-way, as a crash would.
    broken_dir = str(tmp_path / "broken")
    os.makedirs(os.path.join(broken_dir, "ckpt-20.index"))
    with pytest.raises(Exception):
        run_pretraining(tiny_recipe(data), broken_dir, peak_tflops=1.0)
    assert tf.train.latest_checkpoint(broken_dir).endswith("ckpt-10")
    os.rmdir(os.path.join(broken_dir, "ckpt-20.index"))
    resumed = run_pretraining(tiny_recipe(data), broken_dir, peak_tflops=1.0)
    assert resumed.step == 20
    expected, got = weights(clean_dir), weights(broken_dir)
    for path, value in expected.items():
        np.testing.assert_allclose(got[path], value, rtol=1e-6, atol=1e-7, err_msg=path)
    # The history was cut back to the restored step, then continued: one row per loop, no duplicates.
    assert [r["step"] for r in read_history(os.path.join(broken_dir, "train_metrics.jsonl"))] == [5, 10, 15, 20]


def test_init_checkpoint_loads_the_weights_only(data, tmp_path):
    source = str(tmp_path / "source")
    run_pretraining(tiny_recipe(data, num_train_steps=10), source, peak_tflops=1.0)
    target = str(tmp_path / "target")
    # One step at learning rate 0 (step 0 of the warmup): the weights stay those of the source.
    result = run_pretraining(tiny_recipe(data, num_train_steps=1, num_warmup_steps=1, init_checkpoint=source),
                             target, peak_tflops=1.0)
    assert result.step == 1  # a fresh step counter, not the source's 10
    source_weights, target_weights = weights(source), weights(target)
    for path, value in source_weights.items():
        np.testing.assert_array_equal(target_weights[path], value)
    with pytest.raises(ValueError, match=r"is not a bert_tf checkpoint"):
        run_pretraining(tiny_recipe(data, init_checkpoint=data["train"]), str(tmp_path / "bad"), peak_tflops=1.0)


def test_dynamic_masking_without_next_sentence(data, tmp_path, built):
    """RoBERTa-style options together: masks drawn per batch from the records' tokens, masked-LM loss only."""
    model_dir = str(tmp_path / "roberta")
    result = run_pretraining(tiny_recipe(data, num_train_steps=10, dynamic_masking=True, use_next_sentence=False,
                                         eval_input_file=data["eval"]), model_dir, peak_tflops=1.0)
    assert result.completed
    assert "next_sentence_loss" not in result.last_metrics and np.isfinite(result.last_metrics["loss"])
    assert set(result.eval_results) == {"masked_lm_accuracy", "masked_lm_loss", "loss", "eval_batches"}
    assert result.last_metrics["loss"] == pytest.approx(result.last_metrics["masked_lm_loss"])
    assert not built["trainers"][0].model.use_next_sentence

    # The batches the run trained on against the same records with their static masks. Both pipelines are built
    # afresh from the run's own arguments, with and without its masker: a first pass over a seeded pipeline gives
    # the run's batches in the run's order (a second pass over the run's own dataset object would reshuffle).
    (spec, input_context, _), (held_out, _, _) = built["datasets"]  # training, then eval
    assert spec.is_training and spec.masker is not None
    # The held-out records keep the masks they were written with (bert-evaluate's figure on the same records).
    assert not held_out.is_training and held_out.masker is None
    assert held_out.max_predictions_per_seq == read_schema([data["eval"]]).max_predictions_per_seq
    trained_on = built["real_dataset"](spec, input_context)
    static = built["real_dataset"](dataclasses.replace(spec, masker=None), input_context)
    rows = differing = masks_left = 0
    for dynamic, fixed in zip(trained_on.take(10), static.take(10)):
        dynamic, fixed = ({k: v.numpy() for k, v in batch.items()} for batch in (dynamic, fixed))
        tokens = [restored_tokens(batch) for batch in (dynamic, fixed)]
        np.testing.assert_array_equal(tokens[0], tokens[1])  # the same records underneath
        for d_row, f_row, d_ids in zip(masked_positions(dynamic), masked_positions(fixed), dynamic["input_word_ids"]):
            rows += 1
            differing += d_row != f_row
            # The records' [MASK]s are undone: [MASK] appears only where this batch's own masks put it.
            masks_left += int(np.sum(np.delete(d_ids, sorted(d_row)) == MASK_ID))
    assert rows == 80 and masks_left == 0
    # Fresh masks for most sequences (the rest drew the same positions by chance; 1-2 of ~10 candidates here).
    assert differing / rows > 0.9, f"only {differing} of {rows} sequences got new masks"


MASK_ID = 4  # [MASK] in the test vocab


def masked_positions(batch):
    """Per sequence, the set of positions whose tokens the batch asks the model to predict."""
    return [set(p[w > 0].tolist()) for p, w in zip(batch["masked_lm_positions"], batch["masked_lm_weights"])]


def restored_tokens(batch):
    """The input tokens with the masked positions put back to their labels: the record's original text."""
    ids = batch["input_word_ids"].copy()
    for row, (positions, labels, weights) in enumerate(zip(batch["masked_lm_positions"], batch["masked_lm_ids"],
                                                           batch["masked_lm_weights"])):
        ids[row, positions[weights > 0]] = labels[weights > 0]
    return ids


def test_options_reach_the_training_loop(data, tmp_path, built):
    """--optimizer=lamb, --mixed_precision=mixed_bfloat16 and --jit_compile change what run_pretraining trains with,
    not only the recipe it writes."""
    recipe = tiny_recipe(data, num_train_steps=5, optimizer="lamb", mixed_precision="mixed_bfloat16",
                         jit_compile=True)
    result = run_pretraining(recipe, str(tmp_path / "options"), peak_tflops=1.0)
    assert result.completed and np.isfinite(result.last_metrics["loss"])
    (trainer,) = built["trainers"]
    assert type(trainer.optimizer) is Lamb and int(trainer.optimizer.iterations.numpy()) == 5
    # bfloat16 compute everywhere but LayerNorm (float32), float32 variables, and no loss scaling (bfloat16 has
    # float32's exponent range).
    layers = list(trainer.model._flatten_layers())
    norms = [layer for layer in layers if isinstance(layer, keras.layers.LayerNormalization)]
    assert norms and {n.compute_dtype for n in norms} == {"float32"}
    assert {layer.compute_dtype for layer in layers if layer not in norms} == {"bfloat16"}
    assert {v.dtype for v in trainer.model.trainable_variables} == {"float32"} and not trainer.loss_scaled
    # The loop the run traced calls each replica's forward and backward pass as one XLA cluster; its softmax is
    # float32 and its dense matmuls bfloat16.
    (_, _, dataset), = built["datasets"]
    graph = trainer.train_loop.get_concrete_function(iter(dataset), tf.constant(1)).graph.as_graph_def()
    ops = list(graph.node) + [op for f in graph.library.function for op in f.node_def]
    assert len([op for op in ops if "_XlaMustCompile" in op.attr and op.attr["_XlaMustCompile"].b]) == 1
    dtypes = {kind: {tf.dtypes.as_dtype(op.attr["T"].type).name for op in ops if op.op == kind}
              for kind in ("Softmax", "MatMul")}
    assert dtypes["Softmax"] == {"float32"} and "bfloat16" in dtypes["MatMul"]
    # The checkpoint holds float32 weights that load as a float32 model.
    assert {v.dtype for v in load_pretrainer(result.model_dir).trainable_variables} == {"float32"}


def test_each_phase_trains_at_its_own_micro_batch(data, tmp_path, monkeypatch):
    """Phases with their own max_micro_batch_size (what --platform writes: more sequences fit at shorter lengths)
    split each step as their own says, even at the same shapes (the step is traced again); the global batch stays."""
    traced = []
    real_gradients = pretraining.Trainer._gradients

    def recording_gradients(self, features):
        traced.append((features["input_word_ids"].shape[0], self.max_micro_batch_size))
        return real_gradients(self, features)

    monkeypatch.setattr(pretraining.Trainer, "_gradients", recording_gradients)
    phase = {"max_seq_length": SEQ, "max_predictions_per_seq": PRED, "input_file": data["train"]}
    recipe = Recipe.from_dict({**tiny_recipe(data).to_dict(), "num_train_steps": 4, "phases": [
        {**phase, "name": "short", "num_steps": 2, "max_micro_batch_size": 8},
        {**phase, "name": "long", "num_steps": 2, "max_micro_batch_size": 2}]})
    result = run_pretraining(recipe, str(tmp_path / "run"), peak_tflops=1.0)
    assert result.completed and np.isfinite(result.last_metrics["loss"])
    assert sorted(set(traced)) == [(8, 2), (8, 8)]  # batch 8 in both; micro-batches of 8, then of 2
    with pytest.raises(InputError, match="per-replica batch of 8 sequences does not split into micro-batches of "
                                         "max_micro_batch_size=3"):  # before the first step, not at phase 2
        run_pretraining(recipe.override({"phases.1.max_micro_batch_size": 3}), str(tmp_path / "bad"),
                        peak_tflops=1.0)
    assert not os.path.exists(tmp_path / "bad" / "bert_config.json")


def test_bad_eval_input_fails_before_training_and_leaves_nothing(data, tmp_path):
    model_dir = str(tmp_path / "run")
    with pytest.raises(InputError, match=r"the eval input \(--eval_input_file\): .*missing.tfrecord"):
        run_pretraining(tiny_recipe(data, eval_input_file=str(tmp_path / "missing.tfrecord")), model_dir,
                        peak_tflops=1.0)
    assert not os.path.exists(model_dir) or os.listdir(model_dir) == []


def test_a_failed_start_does_not_block_the_retry(data, tmp_path):
    # What a start that failed after writing its config leaves: a bert_config.json of another model, no checkpoint.
    model_dir = str(tmp_path / "run")
    model_dir_lib.write_config(model_dir, tiny_config(hidden_size=32))
    result = run_pretraining(tiny_recipe(data, num_train_steps=2, num_warmup_steps=1), model_dir, peak_tflops=1.0)
    assert result.completed and model_dir_lib.read_config(model_dir).hidden_size == 16
    # A real run of another model still is refused.
    with pytest.raises(ValueError, match=r"holds a run of another model \(hidden_size: saved 16, now 32"):
        run_pretraining(tiny_recipe(data, num_train_steps=2, num_warmup_steps=1).override(
            {"model.hidden_size": 32, "model.intermediate_size": 64}), model_dir, peak_tflops=1.0)


def test_prepare_and_train_stand_alone_and_restored_means_restored(data, tmp_path):
    model_dir = str(tmp_path / "run")
    fresh = pretraining.PretrainingRun(tiny_recipe(data, num_train_steps=5), model_dir, peak_tflops=1.0)
    with pytest.raises(RuntimeError, match=r"prepare\(\) must run before"):
        fresh.train()
    fresh.prepare()
    assert fresh.step == 0 and fresh.parts.position is None
    assert fresh.train() is False
    assert fresh.step == 5 and fresh.restored is False  # nothing to restore in a fresh run
    assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-5")

    resumed = pretraining.PretrainingRun(tiny_recipe(data, num_train_steps=10), model_dir, peak_tflops=1.0)
    resumed.prepare()
    assert resumed.step == 5 and resumed.restored is False  # found, not restored yet
    assert resumed.train() is False
    assert resumed.step == 10 and resumed.restored is True
    # A finished run restores its final weights for the evaluation in finish().
    done = pretraining.PretrainingRun(tiny_recipe(data, num_train_steps=10), model_dir, peak_tflops=1.0)
    done.prepare()
    assert done.train() is False and done.restored is False
    result = done.finish(False)
    assert done.restored is True and result.completed and result.step == 10


def test_an_eval_set_smaller_than_the_batch_is_evaluated_whole(data, tmp_path):
    small = write_records(tmp_path / "small_eval.tfrecord", 5, SEQ, PRED, seed=7)
    result = run_pretraining(tiny_recipe(data, num_train_steps=2, num_warmup_steps=1, eval_input_file=small),
                             str(tmp_path / "run"), peak_tflops=1.0)
    assert result.completed and result.eval_results["eval_batches"] == 1
    # 13 records in batches of 8: the second batch padded with 3 zero-weight rows; every record counted once, as in
    # one batch of all 13.
    model = load_pretrainer(str(tmp_path / "run"))
    odd = write_records(tmp_path / "odd_eval.tfrecord", 13, SEQ, PRED, seed=8)
    padded = evaluate(model, pretraining_dataset(InputSpec(odd, SEQ, PRED, 8, is_training=False,
                                                           drop_remainder=False)),
                      batch_size=8)
    whole = evaluate(model, pretraining_dataset(InputSpec(odd, SEQ, PRED, 13, is_training=False)))
    assert padded["eval_batches"] == 2 and whole["eval_batches"] == 1
    for name in ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss"):
        np.testing.assert_allclose(padded[name], whole[name], rtol=1e-5, err_msg=name)


def test_each_phase_says_how_often_it_reads_its_records(data, tmp_path, caplog):
    caplog.set_level("INFO", logger="absl")  # whatever verbosity an earlier test in this worker left absl at
    run_pretraining(tiny_recipe(data, num_train_steps=4, num_warmup_steps=1), str(tmp_path / "run"), peak_tflops=1.0)
    assert "about 0.1 passes over its ~256 records." in caplog.text  # 4 steps x 8 of 256 records
    assert "reads its records more than 50 times" not in caplog.text
    caplog.clear()
    few = write_records(tmp_path / "few.tfrecord", 4, SEQ, PRED, seed=9)  # 30 steps x 8 of 4 records: 60 passes
    run_pretraining(tiny_recipe(data, input_file=[few], num_train_steps=30), str(tmp_path / "few"), peak_tflops=1.0)
    assert "about 60.0 passes over its ~4 records." in caplog.text
    assert "Phase seq16 reads its records more than 50 times: a model memorises so few records" in caplog.text

"""`run_pretraining`: a recipe, a model_dir and a strategy -> a pre-trained, resumable run.

The host loop: for each phase from the one the latest checkpoint is in, build that phase's input pipeline, then
call the `Trainer`'s multi-step `tf.function` (`iterations_per_loop` steps per call) until the phase ends, saving a
checkpoint every `save_checkpoints_steps` and at each phase end. One optimizer, so one schedule and one step counter
over all phases; a new phase has new input shapes, so the loop function retraces for it.
"""

import dataclasses
import os
import time

import keras
import tensorflow as tf
import yaml
from absl import logging

from bert_tf import model_dir as model_dir_lib
from bert_tf.config import BertConfig
from bert_tf.errors import NonFiniteLossError
from bert_tf.inputs.dynamic_masking import DynamicMasker
from bert_tf.inputs.pretraining_dataset import pretraining_dataset
from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.training import report
from bert_tf.training.checkpointing import (TrainingCheckpoint, checkpoint_dir, restore_model_weights,
                                            saved_position)
from bert_tf.training.evaluation import evaluate
from bert_tf.training.flops import training_flops_per_sequence
from bert_tf.training.peak_flops import measure_peak_flops
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.preemption import SigtermFlag
from bert_tf.training.recipe import check_ready
from bert_tf.training.strategy import any_worker, check_same_on_all_workers, worker_layout
from bert_tf.training.trainer import Trainer
from bert_tf.training.training_log import HISTORY_FILE, TrainingLog, read_history

RECIPE_FILE = "recipe.yaml"
_COMPUTE_DTYPE = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


@dataclasses.dataclass
class PretrainingResult:
    """What a call to `run_pretraining` did.

    Attributes:
        model_dir: the run's directory (`load_pretrainer(model_dir)` reads the model).
        step: the global step reached.
        completed: whether the run reached `num_train_steps`.
        preempted: whether it stopped on SIGTERM (after saving); re-running resumes.
        checkpoint: the latest checkpoint's path.
        eval_results: the final eval metrics (None without an eval input or when not completed).
        last_metrics: the metrics of the last loop (means over its steps, with speed and MFU).
        curves_png, summary_file: the end-of-run artefacts.
    """

    model_dir: str
    step: int
    completed: bool
    preempted: bool
    checkpoint: str
    eval_results: dict
    last_metrics: dict
    curves_png: str
    summary_file: str


def run_pretraining(recipe, model_dir, strategy=None, peak_tflops=None):
    """Pre-trains (or resumes pre-training) a `BertPretrainer` as the recipe says.

    Re-running with the same `model_dir` resumes from its latest checkpoint: same step, same phase, same position
    in the input (the iterator is checkpointed; the data order follows from `recipe.seed`), same dropout RNG.
    `recipe.init_checkpoint` (a `bert-convert` or `bert-pretrain` directory) initialises the model weights of a
    fresh run. SIGTERM saves a checkpoint and returns with `preempted=True`. A non-finite loss raises
    `NonFiniteLossError` without saving, so the latest checkpoint stays the last good one.

    Args:
        recipe: a `Recipe` (see `load_recipe` and `Recipe.with_overrides`) whose phases all have input files.
        model_dir: where checkpoints, `bert_config.json`, `vocab.txt`, TensorBoard logs and reports go.
        strategy: a `tf.distribute.Strategy` (see `create_strategy`); the default strategy when None.
        peak_tflops: the hardware's peak TFLOP/s over all workers, for the MFU; measured when None.

    Returns:
        A `PretrainingResult`.

    Example:
    >>> recipe = load_recipe("demo_cpu").with_overrides(input_file=["data/train-*.tfrecord"],
    ...                                                 vocab_file="data/vocab.txt",
    ...                                                 eval_input_file="data/heldout.tfrecord")
    >>> result = run_pretraining(recipe, "runs/demo")
    >>> result.eval_results["masked_lm_accuracy"]
    0.31
    """
    check_ready(recipe)
    strategy = strategy or tf.distribute.get_strategy()
    layout = worker_layout(strategy)
    ckpt_dir = checkpoint_dir(model_dir, layout)
    position = saved_position(ckpt_dir)
    config = recipe.bert_config(_init_checkpoint_config(recipe))
    _check_model_dir_config(model_dir, config)
    for phase in recipe.phases:
        layout.worker_batch_size(recipe.phase_batch_size(phase))
    if layout.is_chief:
        _write_model_dir_files(model_dir, config, recipe)

    keras.utils.set_random_seed(recipe.seed)
    with strategy.scope():
        model = create_pretrainer(config, recipe.mixed_precision, recipe.use_next_sentence)
        optimizer = create_optimizer(recipe)
        step_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        phase_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="phase")
    trainer = Trainer(strategy, layout, model, optimizer, recipe.max_micro_batch_size, recipe.jit_compile)
    if position is None and recipe.init_checkpoint:
        restore_model_weights(model, recipe.init_checkpoint)
    start_step = position[1] if position else 0
    check_same_on_all_workers(strategy, layout, "step of the latest checkpoint", start_step)
    log = TrainingLog(model_dir, layout.is_chief, start_step, recipe.num_train_steps)
    peak_flops = (peak_tflops * 1e12 if peak_tflops else
                  measure_peak_flops(_COMPUTE_DTYPE[recipe.mixed_precision]) * layout.num_pipelines)
    masker = (DynamicMasker(recipe.vocab_file, recipe.dynamic_masking.masked_lm_prob,
                            recipe.dynamic_masking.do_whole_word_mask) if recipe.dynamic_masking.enabled else None)

    started = time.perf_counter()
    step, preempted, ckpt, last_row, restored = start_step, False, None, {}, position is None
    with SigtermFlag() as sigterm:
        for index, (phase, end) in enumerate(zip(recipe.phases, recipe.phase_ends)):
            if step >= end:
                continue
            global_batch = recipe.phase_batch_size(phase)
            replica_batch = global_batch // layout.num_replicas
            micro, accumulation = trainer.micro_batching(replica_batch)
            logging.info("Phase %s: steps %d-%d, seq %d, %d predictions; global batch %d = %d replica(s) x %d "
                         "micro-batch(es) x %d sequences.", phase.name, step, end, phase.max_seq_length,
                         phase.max_predictions_per_seq, global_batch, layout.num_replicas, accumulation, micro)
            dataset = pretraining_dataset(
                phase.input_file, phase.max_seq_length, phase.max_predictions_per_seq,
                layout.worker_batch_size(global_batch), is_training=True,
                input_context=layout.input_context() if layout.num_pipelines > 1 else None,
                shuffle_buffer=recipe.shuffle_buffer, seed=recipe.seed + index, masker=masker)
            iterator = iter(dataset)
            ckpt = TrainingCheckpoint(ckpt_dir, model, optimizer, step_var, phase_var, iterator,
                                      recipe.keep_checkpoint_max)
            if not restored:
                ckpt.restore(position[0], with_iterator=position[2] == index)
                restored = True
            phase_var.assign(index)
            step = int(optimizer.iterations.numpy())
            flops_per_step = global_batch * training_flops_per_sequence(
                config, phase.max_seq_length, phase.max_predictions_per_seq, recipe.use_next_sentence)
            while step < end:
                next_save = (step // recipe.save_checkpoints_steps + 1) * recipe.save_checkpoints_steps
                num_steps = min(recipe.iterations_per_loop, end - step, next_save - step)
                loop_start = time.perf_counter()
                sums, steps_run, finite, bad_step = trainer.train_loop(iterator, tf.constant(num_steps))
                steps_run = int(steps_run.numpy())
                seconds = time.perf_counter() - loop_start
                if not bool(finite.numpy()):
                    raise NonFiniteLossError(_non_finite_message(sums, int(bad_step.numpy()), phase, ckpt_dir))
                step = int(optimizer.iterations.numpy())
                means = {name: float(value.numpy()) / steps_run for name, value in sums.items()}
                last_row = log.record(step, phase.name, means, steps_run, seconds, steps_run * global_batch,
                                      steps_run * flops_per_step, peak_flops)
                preempted = any_worker(strategy, layout, sigterm.is_set())
                if step >= next_save or step >= end or preempted:
                    ckpt.save(step)
                if preempted:
                    break
            if preempted:
                logging.warning("Stopped on SIGTERM at step %d after saving; re-run the same command to resume.",
                                step)
                break

    if not restored:  # the run had finished already: its final weights, for the eval
        tf.train.Checkpoint(model=model).restore(position[0]).expect_partial().assert_existing_objects_matched()
        logging.info("Restored the model of %s (step %d): nothing left to train.", position[0], step)
    completed = step >= recipe.num_train_steps
    eval_results = None
    if completed and recipe.eval.input_file:
        eval_results = _evaluate(recipe, model, masker)
        log.record_eval(step, eval_results)
    history = read_history(os.path.join(model_dir, HISTORY_FILE))
    curves = summary = None
    if layout.is_chief:
        curves = report.plot_curves(history, os.path.join(model_dir, report.CURVES_FILE), eval_results,
                                    step if eval_results else None, title=f"{recipe.name}: {model_dir}")
        lines = report.summary_lines(recipe, config, step, history, eval_results, time.perf_counter() - started,
                                     layout, model_dir)
        summary = report.write_summary(os.path.join(model_dir, report.SUMMARY_FILE), lines)
        for line in lines:
            logging.info("%s", line)
    return PretrainingResult(model_dir=model_dir, step=step, completed=completed, preempted=preempted,
                             checkpoint=tf.train.latest_checkpoint(ckpt_dir), eval_results=eval_results,
                             last_metrics=last_row, curves_png=curves, summary_file=summary)


def create_pretrainer(config, mixed_precision="float32", use_next_sentence=True):
    """A `BertPretrainer` whose layers compute in the `mixed_precision` policy (float32 variables; LayerNorm and
    the attention softmax stay float32 in any policy).

    Example:
    >>> model = create_pretrainer(BertConfig.preset("tiny", vocab_size=100), "mixed_bfloat16")
    >>> model.encoder.layer_0.self_attention.query.compute_dtype
    'bfloat16'
    """
    dtype = None if mixed_precision == "float32" else mixed_precision
    return BertPretrainer(config, use_next_sentence=use_next_sentence, dtype=dtype)


def _evaluate(recipe, model, masker):
    spec, last = recipe.eval, recipe.phases[-1]
    dataset = pretraining_dataset(spec.input_file, spec.max_seq_length or last.max_seq_length,
                                  spec.max_predictions_per_seq or last.max_predictions_per_seq,
                                  spec.eval_batch_size, is_training=False, seed=recipe.seed, masker=masker)
    return evaluate(model, dataset, spec.max_eval_steps)


def _non_finite_message(sums, bad_step, phase, ckpt_dir):
    latest = tf.train.latest_checkpoint(ckpt_dir)
    kept = (f"the latest checkpoint is still {os.path.basename(latest)}, the last good state, and re-running "
            f"resumes from it" if latest else "no checkpoint was written yet")
    return (f"The training loss became {float(sums['loss'].numpy())} at step {bad_step} (phase {phase.name}); "
            f"stopped without saving: {kept} ({ckpt_dir}). Lower --learning_rate or raise --num_warmup_steps, check "
            f"the input records, or leave out --mixed_precision=mixed_float16.")


def _init_checkpoint_config(recipe):
    if recipe.init_checkpoint and model_dir_lib.has_config(recipe.init_checkpoint):
        return model_dir_lib.read_config(recipe.init_checkpoint)
    return None


def _check_model_dir_config(model_dir, config):
    if not model_dir_lib.has_config(model_dir):
        return
    saved = model_dir_lib.read_config(model_dir)
    differences = [f"{k}: saved {v!r}, now {getattr(config, k)!r}" for k, v in saved.to_dict().items()
                   if getattr(config, k) != v]
    if differences:
        raise ValueError(f"{model_dir} holds a run of another model ({', '.join(differences)}): use a new "
                         f"--model_dir, or the config that run used.")


def _write_model_dir_files(model_dir, config, recipe):
    """bert_config.json and vocab.txt (what `load_pretrainer` and `bert-export` read) and the effective recipe."""
    model_dir_lib.write_config(model_dir, config)
    vocab = recipe.vocab_file
    if not vocab and recipe.init_checkpoint:
        vocab = model_dir_lib.vocab_path(recipe.init_checkpoint)
    if vocab and tf.io.gfile.exists(vocab):
        model_dir_lib.copy_vocab(vocab, model_dir)
    model_dir_lib.write_text_atomically(os.path.join(model_dir, RECIPE_FILE),
                                        yaml.safe_dump(recipe.to_dict(), sort_keys=False))

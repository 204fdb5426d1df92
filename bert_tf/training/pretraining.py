"""`run_pretraining`: a recipe, a model_dir and a strategy -> a pre-trained, resumable run.

`PretrainingRun` assembles the run (config, model directory files, model, optimizer, trainer, controller),
restores it and hands each phase to the `Controller`, which calls the `Trainer`'s multi-step `tf.function`
(`iterations_per_loop` steps per call) until the phase ends, saving a checkpoint every `save_checkpoints_steps` and
at each phase end. One optimizer, so one schedule and one step counter (its update count) over all phases; a new
phase has new input shapes, so the loop function retraces for it.
"""

import contextlib
import dataclasses
import math
import os
import time

import keras
import tensorflow as tf
from absl import logging

from bert_tf import model_dir as model_dir_lib
from bert_tf.accelerators.cudnn_flash_attention import run_attention_kernel
from bert_tf.accelerators.flops import training_flops_per_sequence
from bert_tf.accelerators.peak_flops import run_peak
from bert_tf.atomic_output import check_output_directory
from bert_tf.config import BertConfig
from bert_tf.errors import InputError, NonFiniteLossError
from bert_tf.inputs.dynamic_masking import DynamicMasker
from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import pretraining_dataset
from bert_tf.instances.masking import MaskingRules
from bert_tf.modeling.attention_kernel import fused_attention_kernel
from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.optimizers.optimization import create_optimizer
from bert_tf.records.schema import read_schema
from bert_tf.text.file_patterns import expand_file_patterns
from bert_tf.text.tokenizer_settings import TokenizerSettings, settings_path
from bert_tf.text.vocabulary import Vocabulary, read_vocab_file
from bert_tf.training import report
from bert_tf.training.checkpointing import TrainingCheckpoint, checkpoint_dir, restore_model_weights, resume_point
from bert_tf.training.controller import Controller
from bert_tf.training.device_check import check_run_devices
from bert_tf.training.evaluation import check_eval_batch_size, evaluate
from bert_tf.training.extended_vocab_restore import grown_vocab_size
from bert_tf.training.input_hosts import host_iterators
from bert_tf.training.maintenance_notice import MaintenanceWatcher
from bert_tf.training.preemption import PreemptionWatcher
from bert_tf.training.preflight import check_run_inputs
from bert_tf.training.recipe import RecipeError, check_ready
from bert_tf.training.recipe_history import check_resumed_recipe, record_recipe
from bert_tf.training.strategy import worker_layout
from bert_tf.training.trainer import Trainer, micro_batching, replica_updated_counters
from bert_tf.training.training_log import HISTORY_FILE, TrainingLog, read_history

__all__ = ["NonFiniteLossError", "PretrainingResult", "PretrainingRun", "RunParts", "create_pretrainer",
           "resolve_bert_config", "run_pretraining"]

# More passes over a phase's records than this and a model memorises them (the paper's recipe reads its text about
# 40 times, its records, written 10 times with different masks, about 4 times).
MAX_SANE_PASSES = 50
_COMPUTE_DTYPE = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


@dataclasses.dataclass
class PretrainingResult:
    """What a call to `run_pretraining` did.

    Attributes:
        model_dir: the run's directory (`load_pretrainer(model_dir)` reads the model).
        step: the global step reached.
        completed: whether the run reached `num_train_steps`.
        preempted: whether it stopped on SIGTERM or SIGINT (after saving); re-running resumes.
        stopped_by: the signal that stopped it ("SIGTERM", "SIGINT"), or None.
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
    stopped_by: str = None


def run_pretraining(recipe, model_dir, strategy=None, peak_tflops=None, accept_recipe_change=False):
    """Pre-trains (or resumes pre-training) a `BertPretrainer` as the recipe says.

    Re-running with the same `model_dir` resumes from its latest checkpoint: same step, same phase, same position
    in the input (the iterator is checkpointed; the data order follows from `recipe.seed`), same dropout RNG.
    `recipe.init_checkpoint` (a `bert-convert` or `bert-pretrain` directory) initialises the model weights of a
    fresh run. SIGTERM or SIGINT (Ctrl-C) stops the loop after its current step, saves a checkpoint and returns with
    `preempted=True` (a second SIGINT ends the process at once, exit 130). A resumed run whose recipe differs from
    the one its checkpoints were trained with stops before its first step unless `accept_recipe_change`
    (`recipe_history`). A non-finite loss raises `NonFiniteLossError` without saving, so the latest checkpoint stays
    the last good one.

    Args:
        recipe: a `Recipe` (see `load_recipe` and `Section.override`) whose phases all have input files.
        model_dir: where checkpoints, `bert_config.json`, `vocab.txt`, TensorBoard logs and reports go.
        strategy: a `tf.distribute.Strategy` (see `create_strategy`); the default strategy when None.
        peak_tflops: the hardware's peak TFLOP/s over all workers, for the MFU; when None, the accelerator's
            data-sheet peak times the replicas, or on CPUs a measured one (see `peak_flops.run_peak`).
        accept_recipe_change: resume even when the model, optimizer, learning rate or warmup, batch sizes or
            sequence lengths differ from the directory's recorded recipe (`--accept_recipe_change`).

    Returns:
        A `PretrainingResult`.

    Example:
    >>> recipe = load_recipe("demo_cpu").override({"phases.input_file": ["data/train-*.tfrecord"],
    ...                                            "vocab_file": "data/vocab.txt",
    ...                                            "eval.input_file": "data/heldout.tfrecord"})  # doctest: +SKIP
    >>> result = run_pretraining(recipe, "runs/demo")  # doctest: +SKIP
    >>> result.eval_results["masked_lm_accuracy"]  # doctest: +SKIP
    0.31
    """
    return PretrainingRun(recipe, model_dir, strategy, peak_tflops, accept_recipe_change).run()


@dataclasses.dataclass(frozen=True)
class RunParts:
    """What `PretrainingRun.prepare` builds, all at once: the run's objects before its first step.

    Attributes:
        layout: this worker's `WorkerLayout`.
        ckpt_dir: this worker's checkpoint directory.
        position: the `ResumePoint` (the newest checkpoint step every worker has), or None for a fresh run.
        config: the model's `BertConfig`.
        masker: the `DynamicMasker` when the recipe masks dynamically, else None.
        model, optimizer: the `BertPretrainer` and its optimizer (whose update count is the global step).
        phase_var: an int64 variable holding the index of the phase being trained (checkpointed).
        trainer: the `Trainer`.
        log: the `TrainingLog`.
        controller: the `Controller` that trains each phase.
        preemption, maintenance: the `PreemptionWatcher` and `MaintenanceWatcher` the controller asks; `train`
            runs them while it trains.
    """

    layout: object
    ckpt_dir: str
    position: object
    config: BertConfig
    masker: object
    model: object
    optimizer: object
    phase_var: object
    trainer: Trainer
    log: TrainingLog
    controller: Controller
    preemption: PreemptionWatcher
    maintenance: MaintenanceWatcher


class PretrainingRun:
    """One pre-training run as an object with actions that stand alone: `prepare` (checks, config, model
    directory files, model, optimizer, trainer, controller), `train` (each phase not finished yet, through the
    `Controller`; restores the latest checkpoint first), `finish` (evaluation, curves, summary); `run` does all
    three.

    Attributes:
        parts: the `RunParts` that `prepare` built (None before).
        step: the global step reached so far (the restored checkpoint's step after `prepare`).
        restored: whether the latest checkpoint of `model_dir` has been restored (False for a fresh run).

    Example:
    >>> run = PretrainingRun(recipe, "runs/demo")  # doctest: +SKIP
    >>> run.prepare()  # doctest: +SKIP
    >>> preempted = run.train()  # doctest: +SKIP
    >>> run.step, run.restored  # doctest: +SKIP
    (1000, False)
    >>> result = run.finish(preempted)  # doctest: +SKIP
    """

    def __init__(self, recipe, model_dir, strategy=None, peak_tflops=None, accept_recipe_change=False):
        self.recipe = recipe
        self.accept_recipe_change = accept_recipe_change
        self.model_dir = model_dir
        self.strategy = strategy or tf.distribute.get_strategy()
        if peak_tflops is not None and not (isinstance(peak_tflops, (int, float)) and 0 < peak_tflops < math.inf):
            raise InputError(f"--peak_tflops={peak_tflops!r} must be a positive number (the devices' peak TFLOP/s "
                             f"together), or left out to measure it.")
        self.peak_tflops = peak_tflops
        self.started = time.perf_counter()
        self.parts = None
        self.step = 0
        self.restored = False
        self.passes = {}  # phase index -> the log's words on how often the phase reads its records
        self.attention_kernel = None  # model.attention's kernel, None for today's attention

    def run(self):
        """`prepare`, `train` and `finish`; returns the `PretrainingResult`."""
        self.prepare()
        return self.finish(self.train())

    def prepare(self):
        """Checks the recipe, resolves the model config, writes the model directory's files, builds the model,
        optimizer, trainer and controller, and initialises a fresh run's weights from `init_checkpoint`."""
        recipe = self.recipe
        check_ready(recipe)
        check_output_directory(self.model_dir)
        check_run_devices(recipe, self.strategy)
        layout = worker_layout(self.strategy)
        logging.info("%s", layout.describe_input())
        if recipe.eval.input_file:
            check_eval_batch_size(recipe.eval.eval_batch_size, layout)
        ckpt_dir = checkpoint_dir(self.model_dir, layout)
        position = resume_point(self.strategy, layout, self.model_dir, recipe.restart_input_on_resize)
        config = resolve_bert_config(recipe)
        self.attention_kernel = run_attention_kernel(recipe.model.attention, recipe.jit_compile,
                                                     recipe.mixed_precision, config.attention_probs_dropout_prob)
        changes = []
        if position is not None:  # a config or recipe without a checkpoint is a failed start's
            model_changes = _check_model_dir_config(self.model_dir, config)
            changes = check_resumed_recipe(self.model_dir, recipe, position.step, self.accept_recipe_change,
                                           model_changes)
        for phase in recipe.phases:
            layout.host_batch_size(recipe.phase_batch_size(phase))
            micro_batching(recipe.phase_batch_size(phase) // layout.num_replicas, recipe.phase_micro_batch_size(phase))
        masker = (DynamicMasker(recipe.vocab_file, recipe.dynamic_masking.masked_lm_prob,
                                recipe.dynamic_masking.do_whole_word_mask)
                  if recipe.dynamic_masking.enabled else None)
        vocab = _run_vocab(recipe, self.model_dir, config, resumed=position is not None)
        record_counts = {}
        check_run_inputs(recipe, config, masker, vocab, record_counts)
        self.passes = {index: _passes_text(recipe, phase, record_counts) for index, phase in enumerate(recipe.phases)}
        if layout.is_chief:
            _write_model_dir_files(self.model_dir, config, recipe, position.step if position else None, changes)

        keras.utils.set_random_seed(recipe.seed)
        with self.strategy.scope():
            model = create_pretrainer(config, recipe.mixed_precision, recipe.use_next_sentence)
            compiled_update = recipe.jit_compile and recipe.jit_compile_scope == "step"
            with replica_updated_counters() if compiled_update else contextlib.nullcontext():
                optimizer = create_optimizer(recipe)
            phase_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="phase")
        trainer = Trainer(self.strategy, layout, model, optimizer, max_micro_batch_size=recipe.max_micro_batch_size,
                          jit_compile=recipe.jit_compile and recipe.jit_compile_scope,
                          all_reduce_dtype=recipe.all_reduce_dtype)
        if position is None and recipe.init_checkpoint:
            restore_model_weights(model, recipe.init_checkpoint, recipe.vocab_file)
        start_step = position.step if position else 0
        log = TrainingLog(self.model_dir, layout.is_chief, start_step, recipe.num_train_steps)
        preemption, maintenance = PreemptionWatcher(trainer.stop_requested), MaintenanceWatcher()
        controller = Controller(
            trainer=trainer, log=log, save_checkpoints_steps=recipe.save_checkpoints_steps,
            iterations_per_loop=recipe.iterations_per_loop, preemption=preemption,
            peak=self._peak(layout), evaluator=self._evaluate if recipe.eval.input_file else None,
            max_seconds_per_loop=recipe.max_seconds_per_loop, maintenance=maintenance)
        self.parts = RunParts(layout=layout, ckpt_dir=ckpt_dir, position=position, config=config, masker=masker,
                              model=model, optimizer=optimizer, phase_var=phase_var, trainer=trainer, log=log,
                              controller=controller, preemption=preemption, maintenance=maintenance)
        self.step = start_step

    def train(self):
        """Trains every phase not finished yet, watching for SIGTERM, SIGINT and maintenance notices meanwhile;
        returns True when stopped by one of those signals (after saving)."""
        parts = self._prepared()
        with parts.preemption, parts.maintenance, fused_attention_kernel(self.attention_kernel):
            for index, (phase, end) in enumerate(zip(self.recipe.phases, self.recipe.phase_ends)):
                if self.step < end and self._train_phase(index, phase, end):
                    return True
        return False

    def _train_phase(self, index, phase, end):
        recipe, parts = self.recipe, self.parts
        layout = parts.layout
        global_batch = recipe.phase_batch_size(phase)
        parts.trainer.use_max_micro_batch_size(recipe.phase_micro_batch_size(phase))
        micro, accumulation = parts.trainer.micro_batching(global_batch // layout.num_replicas)
        logging.info("Phase %s: steps %d-%d, seq %d, %d predictions; global batch %d = %d replica(s) x %d "
                     "micro-batch(es) x %d sequences; %s.", phase.name, self.step, end, phase.max_seq_length,
                     phase.max_predictions_per_seq, global_batch, layout.num_replicas, accumulation, micro,
                     self.passes.get(index, "passes over its records unknown"))
        if self._too_many_passes(index, phase):
            logging.warning("Phase %s reads its records more than %d times: a model memorises so few records "
                            "(training accuracy climbs, held-out accuracy does not). Use more text (or a higher "
                            "--dupe_factor when making the records), fewer steps, or --dynamic_masking.",
                            phase.name, MAX_SANE_PASSES)
        if phase.mixed_inputs:
            logging.info("Phase %s mixes its input sets: %s.", phase.name, phase.input_sets_text)
        spec = self._input_spec(index, layout.host_batch_size(global_batch))
        iterators = host_iterators(layout.hosts, lambda host: pretraining_dataset(
            spec, input_context=layout.input_context(host) if layout.num_input_pipelines > 1 else None))
        checkpoint = TrainingCheckpoint(
            directory=parts.ckpt_dir, model=parts.model, optimizer=parts.optimizer, phase=parts.phase_var,
            iterators=iterators, layout=layout, metric_window=parts.controller.window.sums,
            max_to_keep=recipe.keep_checkpoint_max, async_write=recipe.async_checkpoints)
        if parts.position is not None and not self.restored:
            checkpoint.restore(parts.position,
                               with_iterator=parts.position.phase == index and parts.position.restore_input)
            self.restored = True
        parts.phase_var.assign(index)
        # The batches' own prediction slots: packed rows share theirs among their instances.
        slots = (iterators[0].element_spec["masked_lm_positions"].shape[-1] if iterators
                 else phase.max_predictions_per_seq)
        flops_per_step = global_batch * training_flops_per_sequence(
            parts.config, phase.max_seq_length, slots, recipe.use_next_sentence)
        preempted = parts.controller.train_phase(phase, iterators, checkpoint, end, flops_per_step, global_batch)
        checkpoint.wait()
        self.step = parts.trainer.step
        return preempted

    def finish(self, preempted):
        """Evaluates a completed run, draws the curves and writes the summary (not when preempted)."""
        recipe, model_dir, parts = self.recipe, self.model_dir, self._prepared()
        if parts.position is not None and not self.restored:  # the run had finished already: its final weights
            # The optimizer too: its update count is the global step the eval is recorded at.
            tf.train.Checkpoint(model=parts.model, optimizer=parts.optimizer).restore(parts.position.chief_path) \
                .expect_partial().assert_existing_objects_matched()
            self.restored = True
            logging.info("Restored the model of %s (step %d): nothing left to train.", parts.position.chief_path,
                         self.step)
        completed = self.step >= recipe.num_train_steps
        eval_results = parts.controller.evaluate() if completed else None
        history = read_history(os.path.join(model_dir, HISTORY_FILE))
        curves = summary = None
        if parts.layout.is_chief and not preempted:  # a preempted run has seconds left: the resumed run reports
            curves = report.plot_curves(history, os.path.join(model_dir, report.CURVES_FILE), eval_results,
                                        self.step if eval_results else None, title=f"{recipe.name}: {model_dir}")
            lines = report.summary_lines(recipe, parts.config, self.step, history, eval_results,
                                         time.perf_counter() - self.started, parts.layout, model_dir)
            summary = report.write_summary(os.path.join(model_dir, report.SUMMARY_FILE), lines)
            for line in lines:
                logging.info("%s", line)
        return PretrainingResult(model_dir=model_dir, step=self.step, completed=completed, preempted=preempted,
                                 checkpoint=tf.train.latest_checkpoint(parts.ckpt_dir), eval_results=eval_results,
                                 last_metrics=parts.controller.last_metrics, curves_png=curves,
                                 summary_file=summary,
                                 stopped_by=parts.preemption.signal_name if preempted else None)

    def _prepared(self):
        if self.parts is None:
            raise RuntimeError("PretrainingRun.prepare() must run before train() and finish().")
        return self.parts

    def _too_many_passes(self, index, phase):
        text = self.passes.get(index, "")
        return text.startswith("about ") and float(text.split()[1].replace(",", "")) > MAX_SANE_PASSES

    def _peak(self, layout):
        peak = run_peak(self.strategy, layout.num_replicas, layout.num_workers,
                        _COMPUTE_DTYPE[self.recipe.mixed_precision], peak_tflops=self.peak_tflops)
        if peak:
            logging.info("MFU is measured against %.4g TFLOP/s (%s).", peak.flops_per_second / 1e12, peak.source)
        return peak

    def _input_spec(self, index, batch_size):
        """The `InputSpec` of phase `index`, each pipeline's batch `batch_size`: its records (drawn from the phase's
        own input and each other set at their shares when it mixes them), seeded per phase."""
        recipe, phase = self.recipe, self.recipe.phases[index]
        inputs, weights = phase.input_file, None
        if phase.mixed_inputs:
            inputs, weights = (list(column) for column in zip(*phase.input_sets))
        return InputSpec(inputs, phase.max_seq_length, phase.max_predictions_per_seq, batch_size,
                         shuffle_buffer=recipe.shuffle_buffer, seed=recipe.seed + index, masker=self.parts.masker,
                         row_layout=self._row_layout(phase.max_seq_length, phase.max_predictions_per_seq),
                         packing_window=recipe.row_packing.window, weights=weights)

    def _row_layout(self, max_seq_length, max_predictions_per_seq):
        """The rows the input pipeline packs (None: records as they are); slots sized for the masking rate."""
        rate = self.recipe.dynamic_masking.masked_lm_prob if self.parts.masker else MaskingRules.masked_lm_prob
        return self.recipe.row_packing.row_layout(max_seq_length, max_predictions_per_seq, rate)

    def _evaluate(self):
        eval_spec = self.recipe.eval
        # The last phase's input, one pass over the held-out records in file order, at the eval's lengths.
        last = self._input_spec(len(self.recipe.phases) - 1, eval_spec.eval_batch_size)
        seq = eval_spec.max_seq_length or last.max_seq_length
        pred = eval_spec.max_predictions_per_seq or last.max_predictions_per_seq
        masker = last.masker
        if masker is not None:
            # Held-out records masked once keep their masks under dynamic masking, so that the run's held-out
            # accuracy is bert-evaluate's on the same records, at the rate the baselines beside it are scored at.
            recorded = read_schema(expand_file_patterns(eval_spec.input_file, "eval.input_file"))
            if recorded.max_predictions_per_seq:
                masker, pred = None, eval_spec.max_predictions_per_seq or recorded.max_predictions_per_seq
        held_out = dataclasses.replace(last, input_patterns=eval_spec.input_file, weights=None, max_seq_length=seq,
                                       max_predictions_per_seq=pred, row_layout=self._row_layout(seq, pred),
                                       is_training=False, seed=self.recipe.seed, drop_remainder=False, masker=masker)
        return evaluate(self.parts.model, pretraining_dataset(held_out), eval_spec.max_eval_steps, self.strategy,
                        batch_size=eval_spec.eval_batch_size)


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


def resolve_bert_config(recipe):
    """The run's `BertConfig`: the recipe's `bert_config_file`, else the init checkpoint's config, else its preset
    (with vocab_size from `vocab_file`); then the recipe's model overrides. Errors name the field and the fix.

    >>> resolve_bert_config(load_recipe("bert_base_paper")).hidden_size  # doctest: +SKIP
    768
    """
    spec = recipe.model
    vocab_size = len(read_vocab_file(recipe.vocab_file)) if recipe.vocab_file else None
    if spec.bert_config_file:
        with tf.io.gfile.GFile(spec.bert_config_file, "r") as f:
            config = BertConfig.from_json_string(f.read(), spec.bert_config_file)
    elif recipe.init_checkpoint and model_dir_lib.has_config(recipe.init_checkpoint):
        logging.info("Model architecture from init_checkpoint %s.", recipe.init_checkpoint)
        config = model_dir_lib.read_config(recipe.init_checkpoint)
    else:
        config = BertConfig.preset(spec.preset)
        if vocab_size:
            config = config.replace(vocab_size=vocab_size)
    config = config.override(spec.overrides, f"Recipe {recipe.name!r}: model")
    if vocab_size and vocab_size > config.vocab_size and grown_vocab_size(recipe.init_checkpoint, recipe.vocab_file):
        logging.info("vocab_file %s extends the vocab of init_checkpoint %s from %d to %d rows.", recipe.vocab_file,
                     recipe.init_checkpoint, config.vocab_size, vocab_size)
        config = config.replace(vocab_size=vocab_size)
    if vocab_size and vocab_size > config.vocab_size:
        raise RecipeError(f"vocab_file {recipe.vocab_file} has {vocab_size} tokens but the model's vocab_size is "
                          f"{config.vocab_size}: use the model's vocab, a config with a matching vocab_size, or "
                          f"a vocab that extends the init_checkpoint's (bert-vocab --extend).")
    for phase in recipe.phases:
        if phase.max_seq_length > config.max_position_embeddings:
            raise RecipeError(f"phases[{phase.name}].max_seq_length={phase.max_seq_length} exceeds the model's "
                              f"max_position_embeddings={config.max_position_embeddings}.")
    return config


# The model's fields whose change alters its variables' shapes: a checkpoint of another value cannot be resumed.
_SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                 "max_position_embeddings", "type_vocab_size")


def _check_model_dir_config(model_dir, config):
    """Raises `InputError` when the directory's model differs from `config` in its shapes; returns the other
    differences ("model.FIELD: saved -> now"), which a resumed run must accept (`recipe_history`)."""
    if not model_dir_lib.has_config(model_dir):
        return []
    saved = model_dir_lib.read_config(model_dir)
    changed = [(k, v, getattr(config, k)) for k, v in saved.to_dict().items() if getattr(config, k) != v]
    if any(k in _SHAPE_FIELDS for k, _, _ in changed):
        differences = [f"{k}: saved {v!r}, now {now!r}" for k, v, now in changed]
        raise InputError(f"{model_dir} holds a run of another model ({', '.join(differences)}): use a new "
                         f"--model_dir, or the config that run used.")
    return [f"model.{k}: {v!r} -> {now!r}" for k, v, now in changed]


def _run_vocab(recipe, model_dir, config, resumed):
    """The run's `Vocabulary`: `vocab_file`, else the one the resumed directory keeps, else the init
    checkpoint's. A fresh run without one is refused (the model directory must keep the vocab its model reads:
    bert-export and bert-finetune need it), and so is one whose vocab is smaller than the model's vocab_size, or a
    resumed run given another vocab than the one its directory keeps, or the same read with other settings
    (lower-casing, accent stripping). None for a resumed run of a directory
    without a vocab (nothing to check the records against)."""
    kept = model_dir_lib.vocab_path(model_dir) if resumed else None
    path = recipe.vocab_file or kept or (recipe.init_checkpoint and model_dir_lib.vocab_path(recipe.init_checkpoint))
    if not path:
        if resumed:
            logging.warning("%s keeps no vocab.txt and no --vocab_file was given: the records' special tokens "
                            "are not checked.", model_dir)
            return None
        raise InputError("No vocab for this run: pass --vocab_file=VOCAB, the vocab the records were made with "
                         "(the model's vocab_size follows it, and the model directory keeps a copy, vocab.txt, "
                         "which bert-export and bert-finetune read).")
    vocab = Vocabulary.from_file(path)
    if kept and recipe.vocab_file and Vocabulary.from_file(kept).tokens != vocab.tokens:
        raise InputError(f"--vocab_file={recipe.vocab_file} is not the vocab {model_dir} was trained with "
                         f"({kept}, {len(read_vocab_file(kept))} tokens): pass that one, or use a new --model_dir.")
    if kept and recipe.vocab_file:
        given, trained = TokenizerSettings.for_vocab(recipe.vocab_file), TokenizerSettings.for_vocab(kept)
        if given != trained:
            raise InputError(f"--vocab_file={recipe.vocab_file} is read with {given.describe()} (its settings file "
                             f"{settings_path(recipe.vocab_file)}), but {model_dir} was trained with "
                             f"{trained.describe()} ({settings_path(kept)}): pass the vocab with those settings, or "
                             f"use a new --model_dir.")
    if not resumed and vocab.size < config.vocab_size:
        raise InputError(f"{vocab.source} has {vocab.size} tokens but the model's vocab_size is "
                         f"{config.vocab_size}: bert-export needs them equal. Pass the model's own vocab, or "
                         f"--set=model.vocab_size={vocab.size} for a model of this vocab.")
    return vocab


def _passes_text(recipe, phase, record_counts):
    """How often `phase` reads its records, as the log says it: "about 2.4 passes over its ~12,000 records"
    (the other input sets of a mixed phase named too), or why it is unknown."""
    sequences = phase.num_steps * recipe.phase_batch_size(phase)
    parts = []
    for pattern, share in phase.input_sets:
        records = record_counts.get(pattern)
        if not records:
            return "passes over its records unknown (compressed files)"
        parts.append((sequences * share / records, records))
    rows = " (rows packed from several records: fewer)" if recipe.row_packing.enabled else ""
    own, records = parts[0]
    text = f"about {own:,.1f} passes over its ~{records:,} records{rows}"
    for (passes, count), (pattern, _) in zip(parts[1:], phase.input_sets[1:]):
        text += f", {passes:,.1f} over the ~{count:,} of {pattern}"
    return text


def _write_model_dir_files(model_dir, config, recipe, resumed_at=None, changes=()):
    """bert_config.json and vocab.txt (what `load_pretrainer` and `bert-export` read) and the effective recipe
    (`recipe_history.record_recipe`: a recorded recipe is never rewritten)."""
    model_dir_lib.write_config(model_dir, config)
    vocab = recipe.vocab_file
    if not vocab and recipe.init_checkpoint:
        vocab = model_dir_lib.vocab_path(recipe.init_checkpoint)
    if vocab and tf.io.gfile.exists(vocab):
        model_dir_lib.copy_vocab(vocab, model_dir)
    record_recipe(model_dir, recipe, resumed_at, changes)

"""What a user watches during a run: TensorBoard scalars, a console line per loop, and a JSON-lines history that
survives restarts (the curves PNG and the text summary are drawn from it)."""

import datetime
import json
import os

import tensorflow as tf
from absl import logging

from bert_tf.accelerators.peak_flops import clipped_mfu
from bert_tf.compat.tensorflow_internals import scalar_summary_metadata

HISTORY_FILE = "train_metrics.jsonl"
EVAL_RESULTS_FILE = "eval_results.txt"
_SHORT = {"loss": "loss", "masked_lm_loss": "mlm_loss", "masked_lm_accuracy": "mlm_acc",
          "next_sentence_loss": "nsp_loss", "next_sentence_accuracy": "nsp_acc", "learning_rate": "lr",
          "grad_norm": "grad_norm"}


class TrainingLog:
    """Writes a loop's metrics to TensorBoard (`model_dir/train`, `model_dir/eval`), to `train_metrics.jsonl` and
    to the console. Only the chief writes files; every worker logs its console line.

    Args:
        model_dir: the run's directory.
        is_chief: whether this process writes files.
        resume_step: the step the run restarts from; history lines after it (written after the last checkpoint
            by a run that was killed) are dropped, so the history matches the restored state.
        num_train_steps: the run's last step, for the progress and ETA.

    Example:
    >>> log = TrainingLog(model_dir, is_chief=True, resume_step=0, num_train_steps=1000)  # doctest: +SKIP
    >>> log.record(100, "seq128", {"loss": 7.1, ...}, steps=100, seconds=12.0, sequences=3200,  # doctest: +SKIP
    ...            model_flops=2.2e14, peak=Peak(4e11, "stated: --peak_tflops=0.4"))
    """

    def __init__(self, model_dir, is_chief, resume_step, num_train_steps):
        self.model_dir, self.is_chief, self.num_train_steps = model_dir, is_chief, num_train_steps
        self.history_path = os.path.join(model_dir, HISTORY_FILE)
        self._train_writer = self._eval_writer = None
        self._warned_peak = False
        if is_chief:
            self._train_writer = tf.summary.create_file_writer(os.path.join(model_dir, "train"))
            self._eval_writer = tf.summary.create_file_writer(os.path.join(model_dir, "eval"))
            self._history = [r for r in read_history(self.history_path) if r["step"] <= resume_step]
            self._write_history()

    def record(self, step, phase, means, steps, seconds, sequences, model_flops, peak):
        """One loop of `steps` steps ending at `step`: `means` are its metrics averaged over the steps; the rest
        measure its speed against `peak` (a `peak_flops.Peak`; None leaves the MFU out)."""
        speed = {"steps_per_second": steps / seconds, "sequences_per_second": sequences / seconds,
                 "model_tflops_per_second": model_flops / seconds / 1e12}
        if peak:
            speed["mfu"], warning = clipped_mfu(model_flops / seconds, peak)
            if warning and not self._warned_peak:  # once: the same warning at every loop buries the progress
                logging.warning("%s", warning)
                self._warned_peak = True
        row = {"step": int(step), "phase": phase, **{k: float(v) for k, v in means.items()}, **speed}
        if self.is_chief:
            with self._train_writer.as_default(step=int(step)):
                for name, value in row.items():
                    if name not in ("step", "phase"):
                        write_scalar(name, value)
            self._train_writer.flush()
            self._history.append(row)
            self._write_history()
        remaining = (self.num_train_steps - step) / max(row["steps_per_second"], 1e-9)
        parts = [f"step {step}/{self.num_train_steps} [{phase}]"]
        parts += [f"{_SHORT[k]} {means[k]:.4g}" for k in _SHORT if k in means]
        speed_text = f"{row['sequences_per_second']:.1f} seq/s, {row['model_tflops_per_second']:.3g} TFLOP/s"
        if "mfu" in row:
            speed_text += (f", MFU {100 * row['mfu']:.1f}% of the {peak.kind} peak"
                           + (" (peak reads low)" if row["mfu"] >= 1.0 else ""))
        logging.info("%s | %s | ETA %s", " ".join(parts), speed_text,
                     datetime.timedelta(seconds=int(remaining)))
        return row

    def _write_history(self):
        # Rewritten whole (it is small): GCS files cannot be appended to.
        with tf.io.gfile.GFile(self.history_path, "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in self._history))

    def record_eval(self, step, results):
        """Eval metrics to TensorBoard and, as the original printed them, to `eval_results.txt`."""
        logging.info("***** Eval results (step %d) *****", step)
        for name in sorted(results):
            logging.info("  %s = %s", name, results[name])
        if not self.is_chief:
            return
        with self._eval_writer.as_default(step=int(step)):
            for name, value in results.items():
                write_scalar(name, value)
        self._eval_writer.flush()
        with tf.io.gfile.GFile(os.path.join(self.model_dir, EVAL_RESULTS_FILE), "w") as f:
            for name in sorted(dict(results, global_step=int(step))):
                f.write(f"{name} = {dict(results, global_step=int(step))[name]}\n")


def write_scalar(name, value):
    """A TensorBoard scalar (the "scalars" plugin's format) written with TensorFlow alone: `tf.summary.scalar`
    needs the tensorboard package, which only viewing the logs requires."""
    tf.summary.write(name, tf.constant(float(value), tf.float32), metadata=scalar_summary_metadata())


def read_eval_results(model_dir):
    """The metrics of `eval_results.txt` in `model_dir` (`record_eval`'s `name = value` lines) as floats.

    Example:
    >>> read_eval_results("runs/demo")["masked_lm_accuracy"]  # doctest: +SKIP
    0.1613
    """
    with tf.io.gfile.GFile(os.path.join(model_dir, EVAL_RESULTS_FILE), "r") as f:
        return {name: float(value) for name, value in (line.strip().split(" = ") for line in f if " = " in line)}


def read_history(path):
    """The rows of a `train_metrics.jsonl` (empty when the file does not exist)."""
    if not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path, "r") as f:
        return [json.loads(line) for line in f if line.strip()]

"""The end-of-run artefacts: a PNG of the loss and accuracy curves, and a plain-text summary."""

import io

import tensorflow as tf

from bert_tf.text.file_patterns import expand_file_patterns
from bert_tf.training.word_order_baseline import baseline_line, order_blind_baseline, plateau_line

CURVES_FILE = "training_curves.png"
SUMMARY_FILE = "training_summary.txt"


def plot_curves(history, path, eval_results=None, eval_step=None, title=None):
    """Draws the training loss terms and accuracies against the step (matplotlib, Agg backend: no display).

    Args:
        history: rows of `train_metrics.jsonl` (see `read_history`).
        path: the PNG to write.
        eval_results, eval_step: the final eval metrics, drawn as markers at `eval_step`.
        title: the figure's title.

    Example:
    >>> plot_curves(read_history("model_dir/train_metrics.jsonl"), "model_dir/training_curves.png")  # doctest: +SKIP
    """
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    steps = [row["step"] for row in history]
    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(11, 4))
    curves = ((loss_axes, (("loss", "-"), ("masked_lm_loss", "--"), ("next_sentence_loss", ":"))),
              (accuracy_axes, (("masked_lm_accuracy", "-"), ("next_sentence_accuracy", ":"))))
    for axes, names in curves:
        for name, style in names:
            if not any(name in row for row in history):
                continue
            (line,) = axes.plot(steps, [row.get(name) for row in history], style, label=name)
            if eval_results and eval_step is not None and name in eval_results and name != "loss":
                axes.plot([eval_step], [eval_results[name]], "o", color=line.get_color(), label=f"eval {name}")
        for before, after in zip(history, history[1:]):
            if before["phase"] != after["phase"]:
                axes.axvline(before["step"], color="gray", linewidth=0.8, linestyle="--")
    for axes, label in ((loss_axes, "training loss"), (accuracy_axes, "training accuracy")):
        axes.set_xlabel("step")
        axes.set_ylabel(label)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    accuracy_axes.set_ylim(0.0, 1.0)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100)
    plt.close(figure)
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(image.getvalue())
    return path


def write_summary(path, lines):
    """Writes the summary lines (also what the run prints at its end)."""
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def summary_lines(recipe, config, final_step, history, eval_results, elapsed_seconds, layout, model_dir):
    """The text summary: what ran, how fast, where it ended, and the eval metrics beside the order-blind baseline
    (the plateau), with a line saying so when the run sits on it."""
    lines = [f"bert-pretrain summary: recipe {recipe.name}, model_dir {model_dir}",
             f"model: L={config.num_hidden_layers} H={config.hidden_size} A={config.num_attention_heads} "
             f"I={config.intermediate_size} V={config.vocab_size}",
             f"optimizer: {recipe.optimizer.name}, lr {recipe.learning_rate:g}, warmup {recipe.num_warmup_steps}, "
             f"{layout.num_replicas} replica(s) on "
             f"{layout.num_workers} worker(s) and {layout.num_input_pipelines} input host(s), "
             f"mixed_precision {recipe.mixed_precision}, jit_compile {recipe.jit_compile}",
             # Each phase's own global batch: a recipe's phases may differ (small_fast: 128 at 32 tokens, then 32).
             "phases: " + ", ".join(f"{p.name} {p.num_steps} steps at {p.max_seq_length}/{p.max_predictions_per_seq}, "
                                    f"global batch {recipe.phase_batch_size(p)}"
                                    + (f" (records from {p.input_sets_text})" if p.mixed_inputs else "")
                                    for p in recipe.phases),
             f"steps: {final_step} of {recipe.num_train_steps}; this process ran {elapsed_seconds:.0f} s"]
    if history:
        last = history[-1]
        # The median: the first loop of each phase also traces and compiles the loop function.
        timed = sorted(history, key=lambda r: r["steps_per_second"])[len(history) // 2]
        lines.append("last loop: " + ", ".join(f"{k} {last[k]:.4g}" for k in (
            "loss", "masked_lm_loss", "masked_lm_accuracy", "next_sentence_loss", "next_sentence_accuracy",
            "learning_rate") if k in last))
        lines.append(f"speed (median loop): {timed['steps_per_second']:.3g} steps/s, "
                     f"{timed['sequences_per_second']:.4g} sequences/s, "
                     f"{timed['model_tflops_per_second']:.3g} model TFLOP/s"
                     + (f", MFU {100 * timed['mfu']:.1f}%" if "mfu" in timed else ""))
    if eval_results:
        lines.append("eval: " + ", ".join(f"{k} {v:.4g}" for k, v in sorted(eval_results.items())))
        if "masked_lm_accuracy" in eval_results:
            lines.extend(plateau_lines(recipe, eval_results["masked_lm_accuracy"]))
    return lines


def plateau_lines(recipe, accuracy):
    """The held-out accuracy beside the order-blind baseline of the run's final-phase records scored on its
    held-out ones (`word_order_baseline`), and the plateau line when the run sits there; [] without both inputs.

    Example:
    >>> plateau_lines(load_recipe("runs/small/recipe.yaml"), 0.158)  # doctest: +SKIP
    ['held-out masked-LM accuracy 0.1580; order-blind baseline 0.1503: ...', 'plateau: held-out masked-LM ...']
    """
    last = recipe.phases[-1]
    if not recipe.eval.input_file or not last.input_file:
        return []
    baseline = order_blind_baseline(expand_file_patterns(last.input_file),
                                    expand_file_patterns(recipe.eval.input_file, "eval_input_file"))
    if baseline is None:
        return []
    plateau = plateau_line(accuracy, baseline)
    return [f"held-out masked-LM accuracy {accuracy:.4f}; {baseline_line(baseline)}"] + ([plateau] if plateau else [])


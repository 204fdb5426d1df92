"""configs/platforms.yaml's text, written from the raw rows (`compiler_rows`) by the plan (`compiled_plan`): the
figures of each compiler (`estimates`, `xla_gpu_estimates`, `xla_tpu_estimates`) and every entry's micro-batches
and comment. What is chosen by hand (an entry's device, precision, XLA settings, eval batch, memory source and
margin, and the comment of an entry no compiler plans) is read from the file's current text, so writing the file
again from the same rows gives the same text; tests/test_platforms.py fails when it does not (the file is stale)."""

import yaml

from bert_tf.accelerators.device_peaks import DEVICES
from bert_tf.platforms.compile_targets import TPU_TARGETS
from bert_tf.platforms.compiled_plan import cpu_step_bytes, no_remat_peak, plan_cpu, plan_gpu, plan_tpu
from bert_tf.platforms.micro_batch import GIB

# The card each XLA:GPU row was compiled for, by the platform it plans (its `device` as jax names it).
GPU_CARDS = {"h100_80gb": "NVIDIA H100 80GB HBM3"}
ENTRY_KEYS = ("device", "mixed_precision", "jit_compile", "jit_compile_scope", "models", "eval_batch_size",
              "memory_source", "memory_margin")
PRESET_NAMES = {"base": "BERT-base, 110M parameters", "large": "BERT-large, 335M parameters"}

HEADER = """\
# Settings that fit each accelerator: `bert-pretrain --config=bert_large_paper --platform=tpu_v4 ...`, read and
# checked by bert_tf/platforms/platforms_file.py. What each key means and how the micro-batches are chosen:
# docs/accelerators.md, "Platforms"; the figures behind them, with their commands, versions and compile times:
# docs/measurements.md, "Accelerator memory". Written by tools/xla/plan_platforms.py from the raw rows under
# tools/xla/results/plan_platforms/ (edit an entry's hand-chosen keys here, then write the file again).
#
# A platform changes how a step is computed (mixed_precision, each phase's max_micro_batch_size accumulated into the
# recipe's global batch of 256, eval_batch_size, whole-step XLA on GPUs), never what is trained; flags given
# explicitly still win. eval_batch_size splits over the replicas one process drives (every chip of a TPU slice, the
# 8 GPUs of a machine). Each phase's micro-batch is the largest power of two up to 256 whose step at that length
# stays under (1 - memory_margin) of one replica's device by the figures its memory_source names:
#   XLA:CPU estimate: `estimates`, XLA:CPU's buffers, fixed + per_sequence x micro-batch
#   XLA:GPU estimate: `xla_gpu_estimates`, XLA:GPU's, compiled ahead of time for an H100
#   XLA:TPU estimate: `xla_tpu_estimates`, XLA:TPU's, compiled by libtpu for one chip
# A compiler's figures are the peak without the recomputation it does to squeeze a step onto the device.
"""
GPU_COMMENT = """\
xla_gpu_estimates:   # GiB per replica by preset, length and micro-batch: XLA:GPU's buffers of the mixed_bfloat16
  {name}:         # step at global batch 256 (jaxlib {jaxlib}, h100_sxm_target.txtpb);
    device_gib: {device_gib}   # the card as CUDA reports it; peak: arguments + temporaries (outputs reuse the \
arguments)
    # peak_gib: compiled for the card (XLA rematerializes to fit it); no_remat_peak_gib: compiled for twice its
    # memory (--memory_scale=2), what the step holds without that recomputation: the micro-batches follow this one
"""
TPU_COMMENT = """\
xla_tpu_estimates:   # GiB per chip by preset, length and micro-batch: XLA:TPU's buffers of the TPU loop's
                     # mixed_bfloat16 step at global batch 256 ({compiler}, one chip): the whole model,
                     # extrapolated in depth from 1- and 2-block compiles where `extrapolated` (chips other than
                     # v5e: from v5e's, their temporaries scaled up by their own ratio to v5e's for the same step;
                     # docs/measurements.md)
"""


def _gib(value_bytes):
    return round(value_bytes / GIB, 2)


def figures_yaml(values):
    """One step's figures as the file writes them: `{arguments_gib: .., temporaries_gib: .., peak_gib: ..,
    no_remat_peak_gib: .. (where recorded), extrapolated: true (where no compile gave it)}`.

    Example:
    >>> figures_yaml({"argument_bytes": GIB, "temporary_bytes": 2 * GIB, "peak_bytes": 3 * GIB, "extrapolated": True})
    '{arguments_gib: 1.0, temporaries_gib: 2.0, peak_gib: 3.0, extrapolated: true}'
    """
    fields = {"arguments_gib": values["argument_bytes"], "temporaries_gib": values["temporary_bytes"],
              "peak_gib": values["peak_bytes"]}
    if "no_remat_peak_bytes" in values:
        fields["no_remat_peak_gib"] = values["no_remat_peak_bytes"]
    text = ", ".join(f"{key}: {_gib(value)}" for key, value in fields.items())
    return "{" + text + (", extrapolated: true" if values["extrapolated"] else "") + "}"


def _figures_block(by_preset, indent):
    lines = []
    for preset, by_seq in by_preset.items():
        lines.append(f"{indent}{preset}:")
        for seq, steps in sorted(by_seq.items()):
            lines.append(f"{indent}  {seq}:")
            lines.extend(f"{indent}    {micro}: {figures_yaml(values)}" for micro, values in sorted(steps.items()))
    return lines


def _models_yaml(models):
    def sizes(fits):
        return ", ".join(f"{seq}: {micro}" for seq, micro in sorted(fits.items()))

    return "{" + ", ".join(f"{preset}: {{max_micro_batch_size: {{{sizes(fits)}}}}}"
                           for preset, fits in models.items()) + "}"


def _value_yaml(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _kept_comments(text):
    """{platform: its comment} from the current file's entries (`  name:   # comment` under `platforms:`)."""
    comments, inside = {}, False
    for line in text.splitlines():
        if line.startswith("platforms:"):
            inside = True
        elif inside and line.startswith("  ") and not line.startswith("    ") and "#" in line:
            name, comment = line.split("#", 1)
            comments[name.strip().rstrip(":")] = comment.strip()
    return comments


def _peaks_comment(models, peak_gib_at, budget_gib, prefix=""):
    """An entry's comment: the planned step's peak at each length, per preset, and the budget it stays under."""
    def peaks(preset, fits):
        return " / ".join(f"{peak_gib_at(preset, seq, micro):.1f}" for seq, micro in sorted(fits.items()))

    parts = ", ".join(f"{preset} {peaks(preset, fits)} GiB" for preset, fits in models.items())
    return f"{prefix}{parts} of {budget_gib:.1f}"


def render_platforms_file(current_text, rows):
    """The file's text from its current text (the hand-chosen keys and comments) and the raw rows
    (`rows["xla_cpu"]`, `rows["xla_gpu"]`, `rows["xla_tpu"]`)."""
    current = yaml.safe_load(current_text)
    entries = current["platforms"]
    kept = _kept_comments(current_text)
    planned, comments = {}, {}
    lines = [HEADER.rstrip("\n")]

    lines.append("estimates:     # GiB per replica, by phase length (max_seq_length)")
    cpu_figures = {}
    for row in rows["xla_cpu"]:
        cpu_figures.setdefault(row["preset"], {})[row["seq"]] = row
    for preset, by_seq in cpu_figures.items():
        lines.append(f"  {preset}:{' ' * (12 - len(preset))}# {PRESET_NAMES[preset]}")
        lines.extend(f"    {seq}: {{fixed_gib: {row['fixed_gib']}, per_sequence_gib: {row['per_sequence_gib']}}}"
                     for seq, row in sorted(by_seq.items()))
    for name, entry in entries.items():
        if (entry.get("memory_source") or "").startswith("XLA:CPU estimate"):
            device_gib = DEVICES[entry["device"]].memory_gib
            planned[name] = plan_cpu(rows["xla_cpu"], entry["memory_margin"], device_gib)
            comments[name] = _peaks_comment(planned[name], lambda p, s, m: cpu_step_bytes(cpu_figures[p][s], m) / GIB,
                                            (1 - entry["memory_margin"]) * device_gib)

    for name, card in GPU_CARDS.items():
        gpu_rows = [row for row in rows["xla_gpu"] if row["device"] == card]
        device_gib = _gib(gpu_rows[0]["device_bytes"])
        plan = plan_gpu(gpu_rows, entries[name]["memory_margin"], device_gib)
        planned[name] = plan["models"]
        comments[name] = _peaks_comment(plan["models"], lambda p, s, m: no_remat_peak(plan["figures"][p][s][m]) / GIB,
                                        (1 - entries[name]["memory_margin"]) * device_gib,
                                        "XLA:GPU without remat. (xla_gpu_estimates): ")
        lines.append(GPU_COMMENT.format(name=name, jaxlib=gpu_rows[0]["jaxlib"], device_gib=device_gib).rstrip("\n"))
        lines.extend(_figures_block(plan["figures"], "    "))

    margins = {entries[target]["memory_margin"] for target in TPU_TARGETS if target in entries}
    if len(margins) > 1:  # one plan borrows across the chips, so they share its margin
        raise ValueError(f"the TPU entries' memory_margin differ ({sorted(margins)}): give them one margin")
    tpu_plans = plan_tpu(rows["xla_tpu"], margins.pop()) if margins else {}
    if tpu_plans:
        lines.append(TPU_COMMENT.format(compiler=next(iter(tpu_plans.values()))["compiler"]).rstrip("\n"))
    for target, plan in tpu_plans.items():
        planned[target] = plan["models"]
        comments[target] = _peaks_comment(
            plan["models"], lambda p, s, m, plan=plan: no_remat_peak(plan["figures"][p][s][m]) / GIB,
            (1 - entries[target]["memory_margin"]) * plan["device_gib"],
            f"{plan['device_gib']:g} GiB HBM per chip; XLA:TPU: ")
        lines.append(f"  {target}:\n    device_gib: {plan['device_gib']:g}")
        lines.extend(_figures_block(plan["figures"], "    "))

    lines.append("platforms:     # max_micro_batch_size by phase length; comments: the step's estimate at 128 / 512 "
                 "tokens")
    for name, entry in entries.items():
        comment = comments.get(name, kept.get(name))
        lines.append(f"  {name}:{' ' * max(1, 12 - len(name))}# {comment}" if comment else f"  {name}:")
        entry = dict(entry, **({"models": planned[name]} if name in planned else {}))
        for key in ENTRY_KEYS:
            if key in entry:
                value = _models_yaml(entry[key]) if key == "models" else _value_yaml(entry[key])
                lines.append(f"    {key}: {value}")
    return "\n".join(lines) + "\n"

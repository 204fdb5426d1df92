"""The micro-batches and figures of configs/platforms.yaml planned from the raw rows (`compiler_rows`), by the one
rule (`micro_batch.largest_fitting_micro_batch`) and the one depth extrapolation (`depth.extrapolate_depth`):

- XLA:CPU (`plan_cpu`): each preset and length's `fixed + per_sequence x micro-batch`, for every platform whose
  memory_source is an XLA:CPU estimate, on its device's memory.
- XLA:GPU (`plan_gpu`): the whole model compiled ahead of time for the card at several micro-batches; the
  micro-batch follows the peaks compiled for a card twice as large (without the recomputation XLA:GPU does to fit
  the card).
- XLA:TPU (`plan_tpu`): the whole model's own compile where there is one, else the whole model extrapolated in depth
  from 1- and 2-block steps. A chip without shallow steps of its own for a preset and length takes those of
  `shallow_from`, its temporaries scaled by the largest ratio of the chip's own to theirs over the BERT steps both
  compiled (at least 1: the chips tile and schedule differently), or, for a chip that compiled none of them, by the
  largest ratio any chip showed.
"""

from bert_tf.platforms.compile_targets import TPU_TARGETS, tpu_hbm_gib
from bert_tf.platforms.compiler_rows import has_figures, row_bytes
from bert_tf.platforms.depth import extrapolate_depth
from bert_tf.platforms.micro_batch import GIB, PLANNED_BATCH, largest_fitting_micro_batch, value_at

PRESET_LAYERS = {"base": 12, "large": 24}
LENGTHS = (128, 512)
FIGURES = ("argument", "temporary", "peak")
# The device whose shallow TPU steps a chip without its own takes.
SHALLOW_FROM = "tpu_v5e"


def no_remat_peak(values):
    """The peak a micro-batch is planned from: without the compiler's recomputation where a compile for a larger
    device recorded it, else the peak."""
    return values.get("no_remat_peak_bytes", values["peak_bytes"])


def whole_model_figures(rows, layers):
    """{micro_batch: {argument_bytes, temporary_bytes, peak_bytes, extrapolated, ...}} of the whole model (`layers`
    blocks) from one device's rows of one preset and length: the whole model's own compiles where there are any
    (`no_remat_peak_bytes` from a compile for a larger device), else the line in depth through the shallow ones at
    each micro-batch compiled at two depths (`extrapolated` True).

    Example: 1 and 1.5 GiB of temporaries with one and two blocks make 12.5 GiB with 24.
    >>> shallow = [{"micro_batch": 8, "layers": n, "memory_scale": 1, "argument_bytes": 0,
    ...             "temporary_bytes": (n + 1) * 2**29, "peak_bytes": (n + 1) * 2**29} for n in (1, 2)]
    >>> whole_model_figures(shallow, 24)[8]["temporary_bytes"] / GIB
    12.5
    """
    by_micro = {}
    for row in rows:
        if row.get("layers") != layers and row.get("memory_scale", 1) == 1 and has_figures(row):
            by_micro.setdefault(row["micro_batch"], {})[row["layers"]] = {
                f"{name}_bytes": row_bytes(row, name) for name in FIGURES}
    figures = {micro: {**extrapolate_depth(depths, layers), "extrapolated": True}
               for micro, depths in sorted(by_micro.items()) if len(depths) >= 2}
    whole = [row for row in rows if row.get("layers") == layers and has_figures(row)]
    for row in sorted(whole, key=lambda row: row.get("memory_scale", 1) != 1):
        micro = row["micro_batch"]
        if row.get("memory_scale", 1) == 1:
            figures[micro] = {f"{name}_bytes": row_bytes(row, name) for name in FIGURES}
            figures[micro].update({"extrapolated": False, **({"remat_instructions": row["remat_instructions"]}
                                                             if "remat_instructions" in row else {})})
        elif micro in figures and not figures[micro]["extrapolated"]:
            figures[micro]["no_remat_peak_bytes"] = row_bytes(row, "peak")
    return figures


def plan_micro_batch(figures, device_bytes, margin):
    """The entry's micro-batch by the one rule and the figures at it and at twice it (up to the planned batch), from
    `whole_model_figures`; a figure at a micro-batch nobody compiled is the line through the nearest ones
    (`extrapolated` True).

    Example: 2 GiB fixed and 0.25 GiB a sequence, extrapolated at 8 and 32: 32 fits 12.8 GiB, 64 (18 GiB) does not.
    >>> figures = {m: {"argument_bytes": 2 * GIB, "temporary_bytes": m * GIB / 4, "peak_bytes": (2 + m / 4) * GIB,
    ...                "extrapolated": True} for m in (8, 32)}
    >>> micro, at = plan_micro_batch(figures, 16 * GIB, 0.2)
    >>> micro, sorted(at), at[64]["peak_bytes"] / GIB
    (32, [32, 64], 18.0)
    """
    micro = largest_fitting_micro_batch([(m, no_remat_peak(v)) for m, v in figures.items()], device_bytes, margin)
    if len(figures) == 1 and (micro or 0) < min(figures):
        # Proportional from zero over-estimates above the one figure and under-estimates below it.
        raise ValueError(f"one figure, at {min(figures)} sequences, does not fit: compile a smaller micro-batch")
    chosen = {}
    for m in (micro, 2 * micro) if micro else ():
        if m > PLANNED_BATCH:
            continue
        if m in figures:
            chosen[m] = figures[m]
            continue
        near = [(k, v) for k, v in figures.items() if v["extrapolated"]] or list(figures.items())
        peak = value_at([(k, v["peak_bytes"]) for k, v in near], m)
        arguments = value_at([(k, v["argument_bytes"]) for k, v in near], m) if len(near) > 1 else \
            near[0][1]["argument_bytes"]  # the weights and slots do not grow with the micro-batch
        chosen[m] = {"argument_bytes": arguments, "temporary_bytes": peak - arguments, "peak_bytes": peak,
                     "extrapolated": True}
    return micro, chosen


def temporaries_ratio(own, other):
    """The largest ratio of a chip's temporaries to another chip's over the BERT steps both compiled, and at least 1
    (borrowed figures are scaled up, never down): the chips tile and schedule differently. The tiny step is left
    out: its few MiB of temporaries are dominated by what a chip reserves whatever the model."""
    theirs = {row["name"]: row_bytes(row, "temporary") for row in other if has_figures(row)
              and row.get("memory_scale", 1) == 1}
    ratios = [row_bytes(row, "temporary") / theirs[row["name"]] for row in own if row["name"] in theirs
              and has_figures(row) and row.get("memory_scale", 1) == 1 and row["preset"] != "tiny"]
    return max([1.0] + ratios)


def scaled(figures, ratio):
    """`whole_model_figures` with the temporaries (and so the peak) times `ratio`."""
    return {micro: {**values, "temporary_bytes": values["temporary_bytes"] * ratio,
                    "peak_bytes": values["peak_bytes"] + values["temporary_bytes"] * (ratio - 1)}
            for micro, values in figures.items()}


def plan_tpu(rows, margin, shallow_from=SHALLOW_FROM):
    """{target: {"device_gib", "compiler", "models": {preset: {seq: micro}}, "figures": {preset: {seq: {micro:
    figures}}}, "borrowed": [(preset, seq)], "ratio", "ratio_from"}} for every TPU target, from the TPU loop's rows
    (none without rows)."""
    loops = [row for row in rows if row.get("step") == "tpu_loop"]
    if not loops:
        return {}
    source_kind = TPU_TARGETS[shallow_from][1]
    source = [row for row in loops if row["device"] == source_kind]
    ratios = {target: temporaries_ratio([row for row in loops if row["device"] == kind], source)
              for target, (_, kind) in TPU_TARGETS.items()}
    plans = {}
    for target, (_, kind) in TPU_TARGETS.items():
        own = [row for row in loops if row["device"] == kind]
        shared = {row["name"] for row in own if row["preset"] != "tiny"} & {row["name"] for row in source}
        entry = {"device_gib": tpu_hbm_gib(target), "compiler": (own or source)[0]["compiler"], "models": {},
                 "figures": {}, "borrowed": [],
                 # a chip that compiled nothing the source chip did takes the largest ratio any chip showed
                 "ratio": ratios[target] if shared else max(ratios.values()),
                 "ratio_from": "its own" if shared else "the largest of the chips'"}
        for preset, layers in PRESET_LAYERS.items():
            for seq in LENGTHS:
                figures = whole_model_figures([row for row in own if row["preset"] == preset and row["seq"] == seq],
                                              layers)
                if len([m for m, v in figures.items() if v["extrapolated"]]) < 2 and target != shallow_from:
                    borrowed = [row for row in source if row["preset"] == preset and row["seq"] == seq
                                and row.get("layers") != layers]
                    figures = {**scaled(whole_model_figures(borrowed, layers), entry["ratio"]), **figures}
                    if borrowed:
                        entry["borrowed"].append((preset, seq))
                if not figures:
                    continue
                micro, chosen = plan_micro_batch(figures, entry["device_gib"] * GIB, margin)
                entry["models"].setdefault(preset, {})[seq] = micro
                entry["figures"].setdefault(preset, {})[seq] = chosen
        plans[target] = entry
    return plans


def plan_gpu(rows, margin, device_gib):
    """{"models": {preset: {seq: micro}}, "figures": {preset: {seq: {micro: figures}}}} from one card's rows of the
    whole model: every micro-batch compiled is kept; the micro-batch follows the ones compiled without
    recomputation (for a card twice as large), since a peak compiled for the card may be squeezed by it."""
    plan = {"models": {}, "figures": {}}
    for preset, layers in PRESET_LAYERS.items():
        for seq in LENGTHS:
            figures = whole_model_figures([row for row in rows if row["preset"] == preset and row["seq"] == seq],
                                          layers)
            if not figures:
                continue
            unsqueezed = {m: v for m, v in figures.items() if "no_remat_peak_bytes" in v}
            plan["models"].setdefault(preset, {})[seq] = plan_micro_batch(unsqueezed, device_gib * GIB, margin)[0]
            plan["figures"].setdefault(preset, {})[seq] = figures
    return plan


def cpu_step_bytes(row, micro):
    """An XLA:CPU estimate row's step in bytes at `micro` sequences: fixed + per_sequence x micro.

    Example:
    >>> cpu_step_bytes({"fixed_gib": 2.0, "per_sequence_gib": 0.5}, 4) / GIB
    4.0
    """
    return (row["fixed_gib"] + row["per_sequence_gib"] * micro) * GIB


def plan_cpu(rows, margin, device_gib):
    """{preset: {seq: micro}} from the XLA:CPU estimate rows (one per preset and length) on a device of
    `device_gib`."""
    models = {}
    for row in rows:
        points = [(m, cpu_step_bytes(row, m)) for m in (1, 2)]  # a line: two points give every micro-batch
        models.setdefault(row["preset"], {})[row["seq"]] = largest_fitting_micro_batch(points, device_gib * GIB,
                                                                                       margin)
    return models

"""The TPU entries of configs/platforms.yaml planned from XLA:TPU's buffers: reads the lines bench/tpu_memory_set.py
(bench/estimate_xla_memory.py) wrote, and prints, for each TPU chip, the micro-batch of BERT-base and BERT-large at
128 and 512 tokens and the `xla_tpu_estimates` block (the figures at that micro-batch and at twice it), in the
platforms file's YAML. Plain Python (no jax, no TensorFlow).

Each micro-batch is the largest power of two up to 256 whose peak without recomputation stays under
(1 - `--margin`) of the chip's HBM (`estimate_xla_memory.plan_micro_batch`): the whole model's own compile where
there is one, else the line through the whole model extrapolated in depth from 1- and 2-block steps. A chip without
shallow steps of its own for a preset and length takes those of `--shallow_from`, its temporaries scaled by the
largest ratio of the chip's own to theirs over the BERT steps both compiled (at least 1: the chips tile and
schedule differently; docs/measurements.md, "XLA:TPU buffers per generation"), or, for a chip that
compiled none of them, by the largest ratio any chip showed; and says so.

    python3 bench/plan_tpu_platforms.py bench/results/estimate_xla_memory/tpu.jsonl
"""

import argparse
import json
import sys

from estimate_xla_memory import GIB, TPU_TARGETS, plan_micro_batch, whole_model_figures

PRESET_LAYERS = {"base": 12, "large": 24}
LENGTHS = (128, 512)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def temporaries_ratio(own, other):
    """The largest ratio of this chip's temporaries to the other chip's over the BERT steps both compiled, and at
    least 1 (borrowed figures are scaled up, never down): the chips tile and schedule differently. The tiny step is
    left out: its few MiB of temporaries are dominated by what a chip reserves whatever the model (v5p: 44 MiB, v5e:
    5 MiB)."""
    theirs = {line["name"]: line["temporary_bytes"] for line in other if "temporary_bytes" in line
              and line["memory_scale"] == 1}
    ratios = [line["temporary_bytes"] / theirs[line["name"]] for line in own if line["name"] in theirs
              and "temporary_bytes" in line and line["memory_scale"] == 1 and line["preset"] != "tiny"]
    return max([1.0] + ratios)


def scaled(figures, ratio):
    """`whole_model_figures` with the temporaries (and so the peak) times `ratio`."""
    return {micro: {**values, "temporary_bytes": values["temporary_bytes"] * ratio,
                    "peak_bytes": values["peak_bytes"] + values["temporary_bytes"] * (ratio - 1)}
            for micro, values in figures.items()}


def plan(lines, margin, shallow_from=None):
    """{target: {"device_gib", "compiler", "models": {preset: {seq: micro}}, "figures": {preset: {seq: {micro:
    figures}}}, "borrowed": [(preset, seq)], "ratio", "ratio_from"}} for every TPU target (none without lines)."""
    plans = {}
    source = [line for line in lines if line["device"] == shallow_from]
    ratios = {device: temporaries_ratio([line for line in lines if line["device"] == device], source)
              for _, _, device in TPU_TARGETS.values()}
    for target, (_, hbm_gib, device) in TPU_TARGETS.items():
        own = [line for line in lines if line["device"] == device and line.get("step") == "tpu_loop"]
        if not own and not any(line.get("step") == "tpu_loop" for line in lines):
            continue
        shared = {line["name"] for line in own if line["preset"] != "tiny"} & {line["name"] for line in source}
        entry = {"device_gib": hbm_gib, "compiler": (own or source)[0]["compiler"], "models": {}, "figures": {},
                 # a chip that compiled nothing v5e did takes the largest ratio any chip showed (the safe side)
                 "borrowed": [], "ratio": ratios[device] if shared else max(ratios.values()),
                 "ratio_from": "its own" if shared else "the largest of the chips'"}
        for preset, layers in PRESET_LAYERS.items():
            for seq in LENGTHS:
                step = [line for line in own if line["preset"] == preset and line["seq"] == seq]
                figures = whole_model_figures(step, layers)
                if (len([m for m, v in figures.items() if v["extrapolated"]]) < 2 and shallow_from
                        and shallow_from != device):
                    borrowed = [line for line in lines if line["device"] == shallow_from and line["preset"] == preset
                                and line["seq"] == seq and line.get("layers") != layers]
                    figures = {**scaled(whole_model_figures(borrowed, layers), entry["ratio"]), **figures}
                    if borrowed:
                        entry["borrowed"].append((preset, seq))
                if not figures:
                    continue
                try:
                    micro, chosen = plan_micro_batch(figures, hbm_gib * GIB, margin)
                except ValueError as error:
                    print(f"# {target} {preset} {seq}: {error}", file=sys.stderr)
                    micro, chosen = None, {}
                entry["models"].setdefault(preset, {})[seq] = micro
                entry["figures"].setdefault(preset, {})[seq] = chosen
        plans[target] = entry
    return plans


def figures_yaml(values):
    """One step's figures as the platforms file writes them: `{arguments_gib: .., temporaries_gib: .., peak_gib: ..,
    no_remat_peak_gib: .. (where it differs), extrapolated: true (where no compile gave it)}`."""
    fields = {"arguments_gib": values["argument_bytes"], "temporaries_gib": values["temporary_bytes"],
              "peak_gib": values["peak_bytes"]}
    if values.get("no_remat_peak_bytes", values["peak_bytes"]) != values["peak_bytes"]:
        fields["no_remat_peak_gib"] = values["no_remat_peak_bytes"]
    text = ", ".join(f"{key}: {round(value / GIB, 2)}" for key, value in fields.items())
    return "{" + text + (", extrapolated: true" if values["extrapolated"] else "") + "}"


def compiled_table(lines):
    """docs/measurements.md's table of the compiles themselves, one row a line, in the file's order."""
    rows = ["| chip | step (mixed_bfloat16, 256 sequences) | blocks | micro-batch | arguments | temporaries | peak "
            "(of HBM) | recomputed | compile |", "|---|---|---|---|---|---|---|---|---|"]
    for line in lines:
        step = f"{line['preset']}, {line['seq']} tokens" + (f", HBM x{line['memory_scale']}"
                                                            if line["memory_scale"] != 1 else "")
        if "peak_bytes" not in line:
            rows.append(f"| {line['device']} | {step} | {line['layers']} | {line['micro_batch']} | refused: "
                        f"{line['error'][:60]} | | | | |")
            continue
        rows.append(f"| {line['device']} | {step} | {line['layers']} | {line['micro_batch']} | "
                    f"{line['argument_bytes'] / GIB:.2f} GiB | {line['temporary_bytes'] / GIB:.2f} GiB | "
                    f"{line['peak_bytes'] / GIB:.2f} GiB ({line['fraction_of_device']:.0%}) | "
                    f"{line['remat_instructions']} | {line['compile_s']:.0f} s |")
    return "\n".join(rows)


def planned_table(plans):
    """docs/measurements.md's table of the entries: per chip and step, the micro-batch chosen, its peak and share."""
    rows = ["| chip | step | micro-batch | peak (of HBM) | twice it | figures |", "|---|---|---|---|---|---|"]
    for target, entry in plans.items():
        for preset, by_seq in entry["figures"].items():
            for seq, steps in by_seq.items():
                micro = entry["models"][preset][seq]
                hbm = entry["device_gib"] * GIB
                cells = []
                for m in (micro, 2 * micro):
                    if m in steps:
                        peak = steps[m].get("no_remat_peak_bytes", steps[m]["peak_bytes"])
                        cells.append(f"{peak / GIB:.2f} GiB ({peak / hbm:.0%})")
                    else:
                        cells.append("-")
                source = "extrapolated" if steps[micro]["extrapolated"] else "compiled"
                if (preset, seq) in entry["borrowed"]:
                    source += " (v5e's shallow steps)"
                rows.append(f"| {target} ({entry['device_gib']} GiB) | {preset}, {seq} tokens | {micro} | "
                            f"{cells[0]} | {cells[1]} | {source} |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("jsonl", help="bench/estimate_xla_memory.py's TPU lines.")
    parser.add_argument("--margin", type=float, default=0.2, help="The share of HBM the micro-batch leaves free.")
    parser.add_argument("--shallow_from", default="TPU v5 lite",
                        help="The device whose shallow steps a chip without its own takes.")
    parser.add_argument("--tables", action="store_true", help="Print docs/measurements.md's two tables instead.")
    args = parser.parse_args(argv)
    lines = read_lines(args.jsonl)
    plans = plan(lines, args.margin, args.shallow_from)
    if args.tables:
        print(compiled_table(lines) + "\n\n" + planned_table(plans))
        return 0
    print("xla_tpu_estimates:")
    for target, entry in plans.items():
        print(f"  {target}:\n    device_gib: {entry['device_gib']}")
        for preset, by_seq in entry["figures"].items():
            print(f"    {preset}:")
            for seq, steps in by_seq.items():
                print(f"      {seq}:")
                for micro, values in sorted(steps.items()):
                    print(f"        {micro}: {figures_yaml(values)}")
    for target, entry in plans.items():
        models = ", ".join(f"{preset}: {{max_micro_batch_size: {{{', '.join(f'{s}: {m}' for s, m in fits.items())}}}}}"
                           for preset, fits in entry["models"].items())
        print(f"# {target} ({entry['compiler']}): models: {{{models}}}"
              + (f"; shallow steps of {args.shallow_from} (temporaries x{entry['ratio']:.3f}, "
                 f"{entry['ratio_from']} ratio) for {entry['borrowed']}" if entry["borrowed"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

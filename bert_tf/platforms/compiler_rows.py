"""The raw rows a compiler's buffer sizes are recorded in: one JSON object per line, one line per compiled step (or
per XLA:CPU estimate), each with the command that produced it and its `source` ("measured", or "transcribed" for
figures recorded before rows existed). configs/platforms.yaml is planned from these rows (`compiled_plan`).

A compiled step's row holds its shapes (preset, seq, micro_batch, layers), the device and compiler, the memory scale
it was compiled at, and XLA's buffer sizes (`*_bytes`; a transcribed row may hold only the `*_gib` its source
printed); a step the compiler refused for want of memory holds its `error` instead of figures."""

import json
import os
import re

from bert_tf.platforms.micro_batch import GIB

SOURCES = ("measured", "transcribed")
# A compiled instruction XLA's rematerialization made has a name with this in it (`fusion.12.remat`, `.remat2`).
REMAT_NAME = re.compile(r"%[\w.-]*\.remat\d*\b")


def peak_bytes(figures):
    """What the step holds at its peak: its arguments, its temporaries and the outputs that do not reuse (alias) a
    donated argument's buffer.

    Example:
    >>> peak_bytes({"argument_bytes": 4, "temporary_bytes": 10, "output_bytes": 4, "alias_bytes": 4})
    14
    """
    return figures["argument_bytes"] + figures["temporary_bytes"] + figures["output_bytes"] - figures["alias_bytes"]


def row_bytes(row, name):
    """A row's figure `name` ("peak", "argument", "temporary") in bytes: its `*_bytes`, or its `*_gib` where a
    transcribed row has only that.

    Example:
    >>> row_bytes({"peak_gib": 1.5}, "peak") / GIB, row_bytes({"peak_bytes": 3}, "peak")
    (1.5, 3)
    """
    if f"{name}_bytes" in row:
        return row[f"{name}_bytes"]
    return row[f"{name}_gib"] * GIB


def has_figures(row):
    """Whether a row holds a peak (a refused compile holds an `error` instead)."""
    return "peak_bytes" in row or "peak_gib" in row


def remat_instructions(compiled_text):
    """How many instructions of a compiled program's text XLA's rematerialization added (0: nothing recomputed)."""
    return len(set(REMAT_NAME.findall(compiled_text)))


def compiled_row(name, manifest, stats, device_bytes, compile_s, device_kind, versions, run):
    """The row of one compiled step. `stats` maps argument/temp/output/alias bytes (None: the compiler refused the
    step for want of memory, `run["extra"]["error"]` says why); `device_bytes` is the real device's memory;
    `versions` gives `jaxlib` and, where the device compiler is not jaxlib's, `compiler` (libtpu's); `run` gives the
    `memory_scale` it was compiled at (how much larger the target was than the device), the `command` and any
    `extra` fields (the remat count, the cost model's figures)."""
    row = {"name": name, "preset": manifest["preset"], "precision": manifest["precision"],
           "batch": manifest["batch"], "seq": manifest["seq"], "micro_batch": manifest["micro_batch"],
           "layers": manifest.get("num_hidden_layers"), "step": manifest.get("step", "gpu_step"),
           "device": device_kind, "jaxlib": versions["jaxlib"], "memory_scale": run.get("memory_scale", 1),
           "compile_s": round(compile_s, 1), "device_bytes": device_bytes}
    if versions.get("compiler"):
        row["compiler"] = versions["compiler"]
    if stats is None:
        row["device_gib"] = round(device_bytes / GIB, 2)
    else:
        row.update({key: int(stats[key]) for key in ("argument_bytes", "temporary_bytes", "output_bytes",
                                                     "alias_bytes")})
        row["peak_bytes"] = peak_bytes(row)
        for key in ("argument", "temporary", "output", "peak", "device"):
            row[f"{key}_gib"] = round(row[f"{key}_bytes"] / GIB, 2)
        row["fraction_of_device"] = round(row["peak_bytes"] / device_bytes, 3)
    row.update(run.get("extra") or {})
    row.update({"command": run["command"], "source": "measured"})
    return row


def read_rows(path):
    """The rows of a `.jsonl` file (none when there is no file); each must name its command and source."""
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for number, row in enumerate(rows, 1):
        if not row.get("command") or row.get("source") not in SOURCES:
            raise ValueError(f"{path}:{number}: a row must name its command and a source of {', '.join(SOURCES)}")
    return rows


def done_keys(rows):
    """The (step name, device, memory scale) of every compiled row: a compile that has one is not repeated."""
    return {(row["name"], row["device"], row.get("memory_scale", 1)) for row in rows if "name" in row}


def step_folders(paths):
    """The exported step folders named by `paths`, in order: a folder with a manifest.json is a step; a folder
    without one stands for its sub-folders that have one (sorted)."""
    folders = []
    for path in paths:
        if os.path.exists(os.path.join(path, "manifest.json")):
            folders.append(path)
            continue
        inner = sorted(os.path.join(path, name) for name in os.listdir(path)
                       if os.path.exists(os.path.join(path, name, "manifest.json")))
        if not inner:
            raise ValueError(f"{path}: neither a step folder nor a folder of steps (no manifest.json)")
        folders.extend(inner)
    return folders

"""Renders the documents' tables of figures from the result rows they are made of, so that a figure lives in one
place, its row, and a document shows it.

Rows are JSON objects, one a line, under `bench/results/<script>/` (benchmarks against a peer) and
`experiments/results/<script>/` (experiments); each names its `command` and its `source`: `measured` (written by the
run) or `transcribed` (a figure recorded before rows existed, copied from the document that first gave it). A
document asks for a table with a comment that holds a small YAML spec; the renderer writes the table after it, up
to the closing comment, and leaves the prose around it alone:

    <!-- rows
    file: bench/results/bench_create_data/2026-11-23.jsonl
    where: {kind: speed}
    columns:
      - [measure, "{measure}"]
      - [figure, "{figure:,.0f} ({ratio}x the original)", "{figure}"]
    -->
    ...the table the renderer wrote...
    <!-- end rows -->

The spec's keys: `file` (a path or glob, or a list of them, from the repository root), `where` (field: value, or
field: [values]; the rows whose fields match all of them, in file order), `columns` (a header, then one or more
`str.format` templates over the row: the first template the row fills is used, a null field counting as missing,
else the cell is empty; `{a / b}` divides a field by a field, a number or a unit of `UNITS`, and `+`, `-`, `*` work
too, left to right), `group` (`by`: a field, `name`: a template, where a field the row lacks reads ''; one table
line per value of `by`, holding the first row's fields and each row under its `name`, e.g. `{steps750[x]}`),
`names` (field: {value: text}, shown for `{field}`), and `commands` (false to leave out the indented block of the
rows' distinct commands that precedes the table). Below the table a line names the rows' files and sources.

    python tools/render_measurements.py            # rewrites docs/*.md and README.md where a table is stale
    python tools/render_measurements.py --check    # exits 1 naming each stale document (tests/test_measurements.py)
"""

import argparse
import collections
import glob
import json
import operator
import os
import re
import string
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("measured", "transcribed")
# Units a template may divide by: `{peak_bytes / GiB:.2f} GiB`, `{step_s / ms:.1f} ms`.
UNITS = {"GiB": 2**30, "MiB": 2**20, "ms": 1e-3}
BLOCK = re.compile(r"(<!-- rows\n(?P<spec>.*?)-->\n)(?P<body>.*?)(<!-- end rows -->)", re.DOTALL)


def documents(root=REPO):
    """The documents that may hold tables of figures: docs/*.md and README.md."""
    return sorted(glob.glob(os.path.join(root, "docs", "*.md"))) + [os.path.join(root, "README.md")]


def read_rows(patterns, root=REPO):
    """(file relative to root, row) for each line of the files the patterns name, in order; ValueError when a
    pattern names no file, a line is not a JSON object, or a row lacks its command or source."""
    rows = []
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        paths = sorted(glob.glob(os.path.join(root, pattern)))
        if not paths:
            raise ValueError(f"no rows at {pattern}")
        for path in paths:
            name = os.path.relpath(path, root)
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                if line.strip():
                    row = json.loads(line)
                    problem = row_problem(row)
                    if problem:
                        raise ValueError(f"{name}:{number}: {problem}")
                    rows.append((name, row))
    return rows


def row_problem(row):
    """Why a row cannot back a figure, or None: every row is an object that names its command and its source."""
    if not isinstance(row, dict):
        return "not a JSON object"
    if not isinstance(row.get("command"), str) or not row["command"]:
        return "no 'command': the command that produced the figure"
    if row.get("source") not in SOURCES:
        return f"'source' is {row.get('source')!r}, not one of {', '.join(SOURCES)}"
    return None


def matches(row, where):
    for field, wanted in (where or {}).items():
        value = row.get(field)
        if isinstance(wanted, list) and not isinstance(value, list):
            if value not in wanted:
                return False
        elif value != wanted:
            return False
    return True


class _Formatter(string.Formatter):
    """`str.format` over a row where a null field counts as missing and `{a / b}` (or `+`, `-`, `*`, evaluated left to
    right) combines fields and units."""

    def get_field(self, field_name, args, kwargs):
        parts = ARITHMETIC.split(field_name)
        if len(parts) > 1:
            values = [float(part) if NUMBER.fullmatch(part) else self.get_field(part, args, kwargs)[0]
                      for part in parts[0::2]]
            value = values[0]
            for sign, operand in zip(parts[1::2], values[1:]):
                value = OPERATORS[sign](value, operand)
            return value, field_name
        value, first = super().get_field(field_name.strip(), args, kwargs)
        if value is None:
            raise KeyError(field_name)
        return value, first


ARITHMETIC = re.compile(r" ([-+*/]) ")
NUMBER = re.compile(r"\d+(\.\d*)?")
OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
FORMATTER = _Formatter()


def cell(fields, templates):
    """The first template that the fields fill, formatted; '' when none does."""
    for template in templates:
        try:
            text = FORMATTER.vformat(template, (), {**UNITS, **fields})
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
            continue
        return text.replace("|", "\\|").replace("\n", " ")
    return ""


def named(row, names):
    """The row with `names` replacing a field's value by its text."""
    row = dict(row)
    for field, texts in (names or {}).items():
        if field in row and str(row[field]) in texts:
            row[field] = texts[str(row[field])]
    return row


def table(spec, root=REPO):
    """The markdown a spec stands for: the rows' commands, the table, and the line naming its rows."""
    selected = [(name, row) for name, row in read_rows(spec["file"], root) if matches(row, spec.get("where"))]
    if not selected:
        raise ValueError(f"no row of {spec['file']} matches {spec.get('where')}")
    rows = [named(row, spec.get("names")) for _, row in selected]
    if "group" in spec:
        lines = {}
        for row in rows:
            line = lines.setdefault(json.dumps(row.get(spec["group"]["by"])), dict(row))
            key = spec["group"]["name"].format_map(collections.defaultdict(str, row))  # a missing field reads ""
            if key in line:
                raise ValueError(f"two rows of {spec['file']} are {key} of {spec['group']['by']}="
                                 f"{row.get(spec['group']['by'])}: narrow `where`")
            line[key] = row
        lines = list(lines.values())
    else:
        lines = rows
    headers = [column[0] for column in spec["columns"]]
    out = []
    if spec.get("commands", True):
        out += ["    " + command for command in dict.fromkeys(row["command"] for row in rows)] + [""]
    out.append("| " + " | ".join(headers) + " |")
    out.append("|" + "---|" * len(headers))
    out += ["| " + " | ".join(cell(line, column[1:]) for column in spec["columns"]) + " |" for line in lines]
    files = ", ".join(f"`{name}`" for name in dict.fromkeys(name for name, _ in selected))
    sources = " and ".join(sorted({row["source"] for _, row in selected}))
    out += ["", f"Rows: {files} ({sources})."]
    return "\n".join(out) + "\n"


def render(text, root=REPO):
    """The document with every table rewritten from its rows."""
    def one(match):
        spec = yaml.safe_load(match.group("spec"))
        return match.group(1) + table(spec, root) + match.group(4)
    return BLOCK.sub(one, text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="Change nothing; exit 1 naming each stale document.")
    parser.add_argument("paths", nargs="*", help="Documents to render (default: docs/*.md and README.md).")
    args = parser.parse_args(argv)
    stale = []
    for path in args.paths or documents():
        text = open(path, encoding="utf-8").read()
        try:
            rendered = render(text)
        except (ValueError, KeyError, yaml.YAMLError) as error:
            print(f"{path}: {error}", file=sys.stderr)
            return 2
        if rendered != text:
            stale.append(os.path.relpath(path, REPO))
            if not args.check:
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    f.write(rendered)
                os.replace(path + ".tmp", path)
    if args.check and stale:
        print("stale, rerun python tools/render_measurements.py: " + ", ".join(stale), file=sys.stderr)
        return 1
    for path in stale:
        print(f"rendered {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

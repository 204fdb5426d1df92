"""No function of bert_tf/ is longer than 60 lines, its docstring left out (blank lines and comments count): a
longer one does several jobs, and its parts deserve names."""

import ast
import glob
import os
import textwrap

from helpers import REPO

MAX_LINES = 60


def function_lengths(source, where):
    """[(lines, "where:line name")] of every function (methods and nested ones too) in `source`."""
    lengths = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                     str):
                lines -= first.end_lineno - first.lineno + 1
            lengths.append((lines, f"{where}:{node.lineno} {node.name}"))
    return lengths


def test_no_function_is_longer_than_60_lines():
    lengths = []
    for path in sorted(glob.glob(os.path.join(REPO, "bert_tf", "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            lengths += function_lengths(f.read(), os.path.relpath(path, REPO))
    assert len(lengths) > 500  # the package's functions are really read
    too_long = sorted(length for length in lengths if length[0] > MAX_LINES)
    assert not too_long, f"functions over {MAX_LINES} lines (docstring excluded): {too_long}"


def test_lines_are_counted_without_the_docstring():
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    source = textwrap.dedent('''
        def fits():
            """A docstring
            of three
            lines."""
        ''') + body + "\n\n\ndef one_more():\n" + body + "\n    return x0\n"
    # The def line and the body count: 60 for the first (at the limit), 61 for the second.
    assert [lines for lines, _ in function_lengths(source, "example.py")] == [60, 61]

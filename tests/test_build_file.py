"""BUILD stays in step with the tree: a py_test per tests/test_*.py, and every file a target names exists."""

import ast
import os
import subprocess
import sys

import pytest

from tools import update_build

# realpath: under `bazel test` this file is a symlink in the runfiles tree, and the checks are about the source tree.
REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def build_calls(path=os.path.join(REPO, "BUILD")):
    """The top-level rule calls of a BUILD file as (rule, {attribute: value}); BUILD syntax parses as Python."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    calls = []
    for statement in tree.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            attributes = {keyword.arg: literal(keyword.value) for keyword in call.keywords}
            calls.append((call.func.id, attributes))
    return calls


def literal(node):
    """The value of a BUILD attribute; for `[...] + glob(...)` the listed part; None for glob(...) alone."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return (literal(node.left) or []) + (literal(node.right) or [])
    if isinstance(node, ast.Call):
        return None
    return ast.literal_eval(node)


def build_calls_from_text(text, folder):
    """build_calls of `text`, written to folder/BUILD."""
    path = folder / "BUILD"
    path.write_text(text)
    return build_calls(str(path))


def test_every_test_file_has_a_py_test_named_after_it():
    targets = {a["name"]: a["srcs"] for rule, a in build_calls() if rule == "pytest_test"}
    files = sorted(f"tests/{name}" for name in os.listdir(os.path.join(REPO, "tests"))
                   if name.startswith("test_") and name.endswith(".py"))
    assert len(files) >= 2 and "tests/test_build_file.py" in files
    # Each file's tiers: test_x for its default tier, test_x_large for its large tests, test_x_fast for its fast ones.
    expected = sorted(name for path in files for name in update_build.target_names(path))
    assert sorted(targets) == expected, "run `python tools/update_build.py` to regenerate BUILD's py_test block"
    for name, srcs in targets.items():
        assert srcs in ([f"tests/{name}.py"], [f"tests/{name.removesuffix('_large')}.py"],
                        [f"tests/{name.removesuffix('_fast')}.py"])
    assert "test_build_file" in targets and "test_demo" in targets and "test_demo_large" in targets


def test_every_file_a_target_names_exists():
    named = []
    for rule, attributes in build_calls():
        for key in ("srcs", "data", "main"):
            value = attributes.get(key)
            values = [value] if isinstance(value, str) else value or []
            named += [(rule, attributes["name"], path) for path in values if not path.startswith((":", "//", "@"))]
    assert len(named) > len(update_build.test_files(REPO))  # the test files, pytest.ini
    missing = [entry for entry in named if not os.path.isfile(os.path.join(REPO, entry[2]))]
    assert not missing, f"BUILD names files that are not in the tree: {missing}"


def test_library_and_tests_cover_the_package_and_its_helpers():
    libraries = {a["name"] for rule, a in build_calls() if rule == "py_library"}
    assert {"bert_tf", "test_support"} <= libraries
    with open(os.path.join(REPO, "BUILD"), encoding="utf-8") as f:
        text = f.read()
    # Globs, so modules other helpers add are in the targets without an edit here.
    for pattern in ('"bert_tf/**/*.py"', '"configs/**"', '"tests/*.py"', '"pytest.ini"'):
        assert pattern in text


def test_workspace_repositories_in_the_tree_exist():
    with open(os.path.join(REPO, "WORKSPACE"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    paths = [keyword.value.value for node in ast.walk(tree) if isinstance(node, ast.Call)
             for keyword in node.keywords if keyword.arg == "path"]
    local = [path for path in paths if not os.path.isabs(path)]
    assert local == ["tools/bazel/rules_cc", "tools/bazel/remote_coverage_tools"]
    for path in local:
        for name in ("WORKSPACE", "BUILD"):
            assert os.path.isfile(os.path.join(REPO, path, name))


def test_build_is_up_to_date_with_the_generator():
    done = subprocess.run([sys.executable, os.path.join(REPO, "tools", "update_build.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_generator_follows_added_removed_large_and_slow_test_files(tmp_path):
    # A file is in the fast tier unless marked: only a file marked slow or large as a whole has no fast target.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_fast.py").write_text("def test_a():\n    assert 1\n")
    (tmp_path / "tests" / "test_heavy.py").write_text("@pytest.mark.large\ndef test_b():\n    assert 1\n")
    (tmp_path / "tests" / "test_mentions.py").write_text('def test_c():\n    assert "pytestmark = pytest.mark.slow"\n')
    (tmp_path / "tests" / "test_scale.py").write_text("pytestmark = pytest.mark.large\ndef test_d():\n    pass\n")
    (tmp_path / "tests" / "test_trains.py").write_text("pytestmark = pytest.mark.slow\ndef test_e():\n    pass\n")
    (tmp_path / "tests" / "helpers.py").write_text("")
    before = f'py_library(name = "x")\n\n{update_build.BEGIN}\nold\n{update_build.END}\n# tail\n'

    after = update_build.updated_build(before, repo=str(tmp_path))
    assert after.startswith('py_library(name = "x")\n\n') and after.endswith("\n# tail\n") and "old" not in after
    calls = build_calls_from_text(after, tmp_path)
    fast = {"tags": ["fast"], "tier": "fast"}
    assert calls == [("py_library", {"name": "x"}),
                     ("pytest_test", {"name": "test_fast", "srcs": ["tests/test_fast.py"]}),
                     ("pytest_test", {"name": "test_fast_fast", "srcs": ["tests/test_fast.py"], **fast}),
                     ("pytest_test", {"name": "test_heavy", "srcs": ["tests/test_heavy.py"]}),
                     ("pytest_test", {"name": "test_heavy_large", "srcs": ["tests/test_heavy.py"], "size": "large",
                                      "tags": ["large"], "tier": "large"}),
                     ("pytest_test", {"name": "test_heavy_fast", "srcs": ["tests/test_heavy.py"], **fast}),
                     ("pytest_test", {"name": "test_mentions", "srcs": ["tests/test_mentions.py"]}),
                     ("pytest_test", {"name": "test_mentions_fast", "srcs": ["tests/test_mentions.py"], **fast}),
                     ("pytest_test", {"name": "test_scale_large", "srcs": ["tests/test_scale.py"], "size": "large",
                                      "tags": ["large"], "tier": "large"}),
                     ("pytest_test", {"name": "test_trains", "srcs": ["tests/test_trains.py"]})]
    assert update_build.updated_build(after, repo=str(tmp_path)) == after

    (tmp_path / "tests" / "test_fast.py").unlink()
    shorter = update_build.updated_build(after, repo=str(tmp_path))
    assert [a["name"] for _, a in build_calls_from_text(shorter, tmp_path)] == [
        "x", "test_heavy", "test_heavy_large", "test_heavy_fast", "test_mentions", "test_mentions_fast",
        "test_scale_large", "test_trains"]


def test_generator_refuses_a_build_without_markers():
    with pytest.raises(SystemExit, match="BEGIN py_test targets"):
        update_build.updated_build('py_library(name = "x")\n')

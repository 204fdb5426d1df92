"""The package's layers (docs/architecture.md, "Layers"): a module imports only from its own folder or file, from
its layer or from lower ones, and no two folders import each other, directly or round a cycle. The layers and the
Keras-only modules are read from the imports themselves (ast), so a late `import` inside a function counts too."""

import ast
import os
import re

import pytest

from helpers import REPO

PACKAGE = os.path.join(REPO, "bert_tf")
ARCHITECTURE = os.path.join(REPO, "docs", "architecture.md")
# Modules that must run without TensorFlow (the GPU machines have JAX only), with every bert_tf module they import.
KERAS_ONLY = ("bert_tf/modeling/", "bert_tf/optimizers/", "bert_tf/accelerators/flops.py",
              "bert_tf/accelerators/device_peaks.py")
TENSORFLOW = ("tensorflow", "tensorflow_text", "tf_keras", "tensorflow_hub")
# The folders beside the package (docs/architecture.md, "Beside the package"), as top-level import names.
BESIDE_THE_PACKAGE = ("bench", "experiments", "tools", "tests")


def read_layers(path=ARCHITECTURE):
    """{unit: layer number} from the numbered list under "## Layers"; a unit is a folder ("bert_tf/text/") or a
    file ("bert_tf/config.py")."""
    text = open(path, encoding="utf-8").read()
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    layers = {}
    for number, rest in re.findall(r"^(\d+)\. (.*)$", section, re.MULTILINE):
        for unit in re.findall(r"`(bert_tf/[^`]*)`", rest.split(":", 1)[0] if ": " in rest else rest):
            layers[unit] = int(number)
    return layers


def modules():
    """Every module of the package as its path relative to the repository ("bert_tf/text/corpus.py")."""
    for root, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(root, name), REPO).replace(os.sep, "/")


def module_path(dotted):
    """"bert_tf.text.corpus" -> "bert_tf/text/corpus.py" (or the package's __init__.py); None if not a module."""
    base = dotted.replace(".", "/")
    for candidate in (base + ".py", base + "/__init__.py"):
        if os.path.exists(os.path.join(REPO, candidate)):
            return candidate
    return None


def imports_of(path):
    """(imported module path or top-level name, line) for every import in a module, at any depth."""
    tree = ast.parse(open(os.path.join(REPO, path), encoding="utf-8").read(), path)
    package = os.path.dirname(path).replace("/", ".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            # `from bert_tf.text import corpus` imports the module bert_tf.text.corpus; `from bert_tf.text.corpus
            # import X` the module bert_tf.text.corpus.
            names = [f"{base}.{alias.name}" if module_path(f"{base}.{alias.name}") else base for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] == "bert_tf":
                while name and not module_path(name):
                    name = name.rpartition(".")[0]
                yield module_path(name), node.lineno
            else:
                yield name.split(".")[0], node.lineno


def unit_of(path, layers):
    matches = [unit for unit in layers if path == unit or (unit.endswith("/") and path.startswith(unit))]
    return max(matches, key=len) if matches else None


def test_every_module_has_a_layer():
    layers = read_layers()
    assert len(layers) >= 10, layers
    unplaced = [path for path in modules() if unit_of(path, layers) is None]
    assert not unplaced, f"add these to the layer list in docs/architecture.md: {unplaced}"


def test_no_module_imports_a_higher_layer_or_closes_a_cycle():
    layers = read_layers()
    wrong, edges = [], {}
    for path in modules():
        unit = unit_of(path, layers)
        for target, line in imports_of(path):
            if not target.startswith("bert_tf/"):
                continue
            target_unit = unit_of(target, layers)
            if target_unit == unit:
                continue
            edges.setdefault(unit, set()).add(target_unit)
            if layers[target_unit] > layers[unit]:
                wrong.append(f"{path}:{line} (layer {layers[unit]}) imports {target} (layer {layers[target_unit]})")
    assert not wrong, "\n".join(wrong)
    assert not find_cycle(edges), f"units import each other: {' -> '.join(find_cycle(edges))}"


def find_cycle(edges):
    """A list of units that import each other round a cycle, or None."""
    state = {}

    def visit(unit, trail):
        state[unit] = "open"
        for target in sorted(edges.get(unit, ())):
            if state.get(target) == "open":
                return trail[trail.index(target):] + [target] if target in trail else [unit, target]
            if target not in state:
                cycle = visit(target, trail + [target])
                if cycle:
                    return cycle
        state[unit] = "done"
        return None

    for unit in sorted(edges):
        if unit not in state:
            cycle = visit(unit, [unit])
            if cycle:
                return cycle
    return None


def test_keras_only_modules_import_no_tensorflow():
    # The named modules and every bert_tf module they reach.
    todo = [path for path in modules() if path.startswith(KERAS_ONLY)]
    seen, found = set(), []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for target, line in imports_of(path):
            if target in TENSORFLOW:
                found.append(f"{path}:{line} imports {target}")
            elif target.startswith("bert_tf/"):
                todo.append(target)
    assert len(seen) > 10 and not found, "\n".join(found)


@pytest.mark.parametrize("edges, cycle", [
    ({"records/": {"text/"}, "instances/": {"records/", "text/"}}, None),
    ({"records/": {"instances/"}, "instances/": {"records/"}}, ["instances/", "records/", "instances/"]),
    ({"a/": {"b/"}, "b/": {"c/"}, "c/": {"a/"}}, ["a/", "b/", "c/", "a/"]),
])
def test_find_cycle(edges, cycle):
    assert find_cycle(edges) == cycle


def test_the_package_imports_nothing_beside_it():
    # bench/, experiments/ and tools/ may import the package, never the reverse (docs/architecture.md, "Beside the
    # package"): a user's installed package has none of them.
    found = [f"{path}:{line} imports {target}" for path in modules() for target, line in imports_of(path)
             if target in BESIDE_THE_PACKAGE]
    assert not found, "\n".join(found)

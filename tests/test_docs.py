"""The repository explains itself: every document the code, configs, tests and benchmarks cite is in docs/, none
outside the repository is cited, every backticked name (dotted or not) and path of the docs and docstrings exists,
and the README names every command."""

import ast
import glob
import os
import re
import subprocess

from helpers import REPO

OUTSIDE = re.compile(r"shared/|\b(RECIPE|ENVIRONMENT|CONTRACT|STYLE)\.md\b")
CITED = re.compile(r"\bdocs/[\w.-]+\.md\b")


def tracked_text_files():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for path in files:
        if path.endswith((".py", ".md", ".yaml", ".json", ".cfg", ".toml", "Makefile", "BUILD", ".txt")):
            full = os.path.join(REPO, path)
            if os.path.exists(full):
                yield path, open(full, encoding="utf-8", errors="replace").read()


def test_cited_documents_exist_and_none_is_outside_the_repository():
    outside, missing, cited = [], [], set()
    for path, text in tracked_text_files():
        if path == "tests/test_docs.py":
            continue
        outside += [f"{path}: {match.group(0)}" for match in OUTSIDE.finditer(text)]
        for match in CITED.finditer(text):
            cited.add(match.group(0))
            if not os.path.exists(os.path.join(REPO, match.group(0))):
                missing.append(f"{path}: {match.group(0)}")
    assert not outside, outside
    assert not missing, missing
    assert {"docs/architecture.md", "docs/original_recipe.md", "docs/record_format.md"} <= cited


# ---- Backticked references in the docs and the package's docstrings resolve ------------------------------------
# `bert_tf.x.y.Name` and `bert_tf.Name`, `module.Name` (a module of bert_tf by its last name, e.g.
# `evaluation.evaluate`, `peak_flops.Peak`), `Class.member` (a class of bert_tf), `text/packing.pair_keep_lengths`,
# and repository paths (`bert_tf/training/recipe.py`, `tests/test_docs.py`, `configs/pretrain/*.yaml`, or a path
# inside bert_tf/ such as `training/recipe.py`). Names are found by reading the source (no import: the commands'
# modules define absl flags), so an attribute set in a class's methods (`self.x = ...`) counts as a member.

SPAN = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(.*\))?$")
MODULE_PATH_NAME = re.compile(r"^([\w/]+)\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)$")
# Installed with the package, not a module in the tree: setup.py copies configs/ there.
PACKAGE_DATA = {"bert_tf.configs"}
# Members every Keras layer or model has (a class here may be cited by them without defining them).
KERAS_MEMBERS = {"get_config", "from_config", "call", "build", "fit", "compile", "predict", "__call__"}


def package_modules():
    """{dotted module name: path} of every module of bert_tf."""
    modules = {}
    for path in glob.glob(os.path.join(REPO, "bert_tf", "**", "*.py"), recursive=True):
        name = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
        modules[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return modules


def class_members(node):
    members = set()
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(child.name)
        elif isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name) and child.value.id in ("self",
                                                                                                          "cls"):
            members.add(child.attr)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            members.add(child.id)
    return members


def top_level_names(tree):
    """(names a module defines or imports at its top, {class name: its members}); `__all__` counts (lazy
    exports)."""
    names, classes = set(), {}
    nodes = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, (ast.If, ast.Try)):
            nodes += node.body + node.orelse + [n for h in getattr(node, "handlers", []) for n in h.body]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                classes[node.name] = class_members(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            if any(isinstance(t, ast.Name) and t.id in ("__all__", "_EXPORTS") for t in getattr(node, "targets", [])):
                names.update(ast.literal_eval(node.value))  # a package's lazy exports
    return names, classes


class Package:
    """What bert_tf's modules define, read from their source."""

    def __init__(self):
        self.modules = package_modules()
        self.trees = {name: ast.parse(open(path, encoding="utf-8").read()) for name, path in self.modules.items()}
        self.defined = {name: top_level_names(tree) for name, tree in self.trees.items()}
        self.classes, self.by_last_name = {}, {}
        for name, (_, classes) in self.defined.items():
            for cls, members in classes.items():
                self.classes.setdefault(cls, []).append(members)
            self.by_last_name.setdefault(name.rsplit(".", 1)[-1], []).append(name)

    def resolves(self, module, parts):
        """Whether `parts` (a name, then maybe a member) is defined in `module` or a submodule of it."""
        if not parts:
            return True
        if f"{module}.{parts[0]}" in self.modules:
            return self.resolves(f"{module}.{parts[0]}", parts[1:])
        names, classes = self.defined[module]
        if parts[0] not in names:
            return False
        if parts[0] in classes and len(parts) > 1:
            return len(parts) == 2 and (parts[1] in classes[parts[0]] or parts[1] in KERAS_MEMBERS)
        return True  # a member of an imported module or of a value: not followed

    def check(self, span):
        """True or False for a reference this test checks, None for any other backticked text."""
        text = re.sub(r"\(.*\)$", "", span.strip())
        if DOTTED.match(span.strip()):
            parts = text.split(".")
            if parts[0] == "bert_tf":
                return text in PACKAGE_DATA or self.resolves("bert_tf", parts[1:])
            if parts[1][:1].isupper() and parts[0] in self.by_last_name:
                return any(self.resolves(module, parts[1:]) for module in self.by_last_name[parts[0]])
            if parts[0] in self.classes and len(parts) == 2:
                return any(parts[1] in members or parts[1] in KERAS_MEMBERS for members in self.classes[parts[0]])
            return None
        first = text.split("/")[0]
        if ("/" not in text or re.search(r"[<>{} ]", text) or not first
                or not (first in TOP_LEVEL or os.path.isdir(os.path.join(REPO, "bert_tf", first)))):
            return None
        if "::" in text:  # a test by its pytest id
            path, _, test = text.partition("::")
            return os.path.exists(os.path.join(REPO, path)) and test in top_level_names(
                ast.parse(open(os.path.join(REPO, path), encoding="utf-8").read()))[0]
        if any(glob.glob(os.path.join(base, text)) for base in (REPO, os.path.join(REPO, "bert_tf"))):
            return True
        named = MODULE_PATH_NAME.match(text)
        if named and not text.endswith((".py", ".md", ".yaml", ".json", ".txt", ".c")):
            module = named.group(1).replace("/", ".")
            module = module if module in self.modules else f"bert_tf.{module}"
            return module in self.modules and self.resolves(module, named.group(2).split("."))
        return False


TOP_LEVEL = {entry for entry in os.listdir(REPO) if not entry.startswith(".") or entry == ".ci"}


def documented_texts():
    """(where, text) for each document of docs/, the README, and each docstring of bert_tf."""
    for path in sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))) + [os.path.join(REPO, "README.md")]:
        yield os.path.relpath(path, REPO), open(path, encoding="utf-8").read()
    for path in sorted(package_modules().values()):
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node, clean=False)
                if docstring:
                    yield f"{os.path.relpath(path, REPO)}:{getattr(node, 'lineno', 1)}", docstring


def test_backticked_names_and_paths_resolve():
    package = Package()
    checked, unresolved = 0, []
    for where, text in documented_texts():
        for match in SPAN.finditer(text):
            verdict = package.check(match.group(1))
            checked += verdict is not None
            if verdict is False:
                unresolved.append(f"{where}: `{match.group(1)}`")
    assert not unresolved, "references to nothing:\n" + "\n".join(unresolved)
    assert checked > 200  # the references are really read (269 on 2026-11-24)


def test_reference_checker_tells_real_names_from_missing_ones():
    package = Package()
    for real in ("bert_tf.training.controller.Controller", "bert_tf.load_encoder", "bert_tf.training",
                 "evaluation.EVAL_METRICS", "Controller.train_phase", "Controller.window", "peak_flops.Peak",
                 "text/packing.pair_keep_lengths", "bert_tf/training/recipe.py", "training/recipe.py",
                 "configs/pretrain/*.yaml", "tests/test_docs.py", "bert_tf.cli.app.run",
                 "tests/test_docs.py::test_readme_names_every_command"):
        assert package.check(real) is True, real
    for missing in ("evaluation.StrategyEvaluator", "Controller.window_end", "bert_tf.records.reader.parse_record",
                    "bert_tf/training/nothing.py", "text/packing.no_such_function", "bert_tf.NoSuchName",
                    "tests/test_docs.py::test_no_such_test"):
        assert package.check(missing) is False, missing
    for other in ("strategy.run", "recipe.seed", "cls/predictions/", "tensorflow/python/distribute/input_lib.py",
                  "input_word_ids", "classifier/<version>", "/job:worker/replica:0/task:1/device:TPU:3",
                  "configs/model/<name>.json"):
        assert package.check(other) is None, other


# ---- An undotted name in backticks is a name of this repository or of a codebase it cites -----------------------
# `read_yaml`, `InputSpec`, `shuffle_buffer`, `create_model()`: the repository's code (bert_tf, tests, bench, tools)
# must use it (a module, class, function, argument, attribute, flag or string key), or a tracked file or a Makefile
# target be named so; otherwise it is a name of another codebase, cited on purpose and listed below with its source,
# or a stale word (a function that was renamed or never existed).

NAME = re.compile(r"^([A-Za-z_]\w*)(?:\(\))?$")
OTHER_CODEBASES = {
    "google-research/bert": {
        "AdamWeightDecayOptimizer", "_do_use_weight_decay", "_get_variable_name", "_is_punctuation",
        "_truncate_seq_pair", "cand_indexes", "convert_single_example", "create_instances_from_document",
        "create_masked_lm_predictions", "create_model", "embedding_lookup", "embedding_postprocessor",
        "gather_indexes", "get_masked_lm_output", "get_next_sentence_output", "load_vocab", "metric_fn",
        "transformer_model"},
    "TensorFlow": {
        "CompositeTensor", "CrossShardOptimizer", "DistributedIterator", "GcpGpuTerminationConfig",
        "PreemptionCheckpointHandler", "Rank", "distribute_datasets_from_function", "exit_fn",
        "save_checkpoint_if_preempted", "strategy_combinations", "termination_watcher_fn"},
    "tensorflow-text": {"MaskValuesChooser", "RandomItemSelector", "RoundRobinTrim", "StateBasedSentenceBreaker"},
    "XLA": {"hlo_rematerialization"},
    "Kubernetes": {"terminationGracePeriodSeconds"},
    "Cloud TPU VMs": {"is_pod"},
    # Runs of docs/convergence.md made with throwaway patches, and Bazel's target names by pattern.
    "docs/convergence.md, BUILD": {"pos_sin_init", "pos_sin_init_x5", "sin_scaled", "test_x", "test_x_large"},
}


def repository_names():
    """Every name the repository's Python code uses (docstrings left out: they are what is checked), its tracked
    files' names and the Makefile's targets. This test file is left out: it names missing names on purpose."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    names = {part for path in files for part in (os.path.basename(path), os.path.basename(path).split(".")[0])}
    makefile = open(os.path.join(REPO, "Makefile"), encoding="utf-8").read()
    names.update(re.findall(r"^([\w-]+):", makefile, flags=re.M))
    for path in files:
        if not path.endswith(".py") or path == "tests/test_docs.py" or not os.path.exists(os.path.join(REPO, path)):
            continue
        tree = ast.parse(open(os.path.join(REPO, path), encoding="utf-8").read())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and ast.get_docstring(node, clean=False) is not None}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.update((node.name + "." + (node.asname or "")).split("."))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                names.update(re.findall(r"[A-Za-z_]\w*", node.value))  # flags, feature names, keys, messages
    return names


def undotted_verdict(span, known):
    """True or False for an undotted name, None for any other backticked text."""
    match = NAME.match(span.strip())
    if not match:
        return None
    return match.group(1) in known or any(match.group(1) in cited for cited in OTHER_CODEBASES.values())


def test_undotted_backticked_names_exist():
    known = repository_names()
    checked, unknown = 0, []
    for where, text in documented_texts():
        for match in SPAN.finditer(text):
            verdict = undotted_verdict(match.group(1), known)
            checked += verdict is not None
            if verdict is False:
                unknown.append(f"{where}: `{match.group(1)}`")
    assert not unknown, ("names in backticks that nothing here defines (a stale word, or a name of another "
                         "codebase to add to OTHER_CODEBASES with its source):\n" + "\n".join(unknown))
    assert checked > 1000  # the names are really read (1624 on 2026-11-27)


def test_undotted_name_checker_tells_real_names_from_missing_ones():
    known = repository_names()
    for real in ("read_yaml", "InputSpec", "shuffle_buffer", "create_model()", "input_word_ids", "dupe_factor",
                 "Makefile", "create_masked_lm_predictions",
                 "test_span_algorithm_equals_the_original_on_real_documents"):
        assert undotted_verdict(real, known) is True, real
    for missing in ("load_yaml", "NoSuchSpec", "shuffle_buffer_size", "load_yaml()"):
        assert undotted_verdict(missing, known) is False, missing
    for other in ("make test", "--input_file", "bert_tf.inputs", "configs/pretrain/*.yaml", "1e-4"):
        assert undotted_verdict(other, known) is None, other


def test_readme_names_every_command():
    setup = open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    commands = re.findall(r'"(bert-[\w-]+)=bert_tf\.cli\.\w+:run"', setup)
    assert commands and [c for c in commands if f"`{c}`" not in readme] == []

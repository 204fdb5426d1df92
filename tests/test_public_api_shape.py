"""No public function or method of bert_tf takes more than 8 parameters besides `self`/`cls`: more is a config object
waiting to be named (`InputSpec`, `InstanceOptions`, `FinetuningRecipe`). Constructors are left out (layers keep
Keras' keyword arguments), and so are names that start with `_`, in a module, a class or a module's own name.

The signatures are read from the source, like tests/test_docs.py does: the commands' modules define absl flags when
imported, so they cannot all be imported into one process."""

import ast
import glob
import os

from helpers import REPO

MAX_PARAMETERS = 8


def parameters(function, method):
    """The names of a function's parameters, `*args` and `**kwargs` included, without a method's `self` or `cls`."""
    args = function.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)
    return names[1:] if method and not static and names[:1] in (["self"], ["cls"]) else names


def public_functions(tree):
    """(qualified name, parameter names) of the module's public functions and its public classes' public methods."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions) and not node.name.startswith("_"):
            yield node.name, parameters(node, method=False)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for member in node.body:
                if isinstance(member, functions) and not member.name.startswith("_"):
                    yield f"{node.name}.{member.name}", parameters(member, method=True)


def package_signatures():
    """{`module.function`: parameter names} for every public function and method of bert_tf."""
    signatures = {}
    for path in sorted(glob.glob(os.path.join(REPO, "bert_tf", "**", "*.py"), recursive=True)):
        module = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".").removesuffix(".__init__")
        if any(part.startswith("_") and part != "__init__" for part in module.split(".")):
            continue
        tree = ast.parse(open(path, encoding="utf-8").read())
        signatures.update({f"{module}.{name}": names for name, names in public_functions(tree)})
    return signatures


def test_no_public_function_takes_more_than_eight_parameters():
    signatures = package_signatures()
    too_many = {name: len(names) for name, names in signatures.items() if len(names) > MAX_PARAMETERS}
    assert not too_many, (f"public functions with more than {MAX_PARAMETERS} parameters (group them into the "
                          f"options object they belong to): {too_many}")
    # The walk really reads the package: the functions named in this rule's history are found, with their new shape.
    assert signatures["bert_tf.inputs.pretraining_dataset.pretraining_dataset"] == ["spec", "input_context"]
    assert len(signatures) > 300


def test_parameters_are_counted_as_python_counts_them():
    source = ("class Model:\n"
              "    def fit(self, x, y, *, epochs=1, **kwargs): ...\n"
              "    @classmethod\n"
              "    def load(cls, path): ...\n"
              "    @staticmethod\n"
              "    def check(self_like, other): ...\n"
              "    def _private(self, a, b, c, d, e, f, g, h, i): ...\n"
              "def build(a, /, b, *args, c, **kwargs): ...\n"
              "def _helper(a, b, c, d, e, f, g, h, i): ...\n")
    assert dict(public_functions(ast.parse(source))) == {
        "Model.fit": ["x", "y", "epochs", "kwargs"], "Model.load": ["path"], "Model.check": ["self_like", "other"],
        "build": ["a", "b", "c", "args", "kwargs"]}

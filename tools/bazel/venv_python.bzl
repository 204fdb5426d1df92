"""A Python toolchain whose interpreter is the project's virtualenv (`make setup` creates it).

The venv holds TensorFlow and the rest of setup.py's dependencies, so the py_library/py_test targets list only the
project's own files: third-party packages come from the interpreter, as they do under `make test`.
"""

def _venv_python_impl(ctx):
    workspace = ctx.path(Label("@//:WORKSPACE")).dirname
    python = workspace.get_child(ctx.attr.venv).get_child("bin").get_child("python")
    if not python.exists:
        fail("No interpreter at %s: run `make setup` in %s to create the venv, then rerun bazel." % (python, workspace))

    # The path stays unresolved: Python finds the venv's site-packages from the pyvenv.cfg next to bin/.
    ctx.file("BUILD", """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

py_runtime(
    name = "runtime",
    interpreter_path = "{python}",
    python_version = "PY3",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
""".format(python = python))

venv_python = repository_rule(
    implementation = _venv_python_impl,
    attrs = {"venv": attr.string(default = ".venv", doc = "The venv folder, relative to the workspace root.")},
    local = True,
    doc = "Registers <workspace>/<venv>/bin/python as the Python 3 toolchain.",
)

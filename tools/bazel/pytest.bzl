"""`pytest_test`: a py_test that runs one tests/test_*.py file under pytest."""

def pytest_test(name, srcs, deps = [], tier = "default", **kwargs):
    """A py_test for the tests of one tier in the pytest files `srcs`, with the package, the test helpers and the
    project's venv.

    Args:
      name: target name, the test file's name without `.py`, `_large` added for the large tier
        (tools/update_build.py writes these).
      srcs: the pytest files, paths from the workspace root.
      deps: more py_library targets besides //:bert_tf and //:test_support.
      tier: "default" (the tests `make test` runs: all but the large ones), "large" (`make test-large`: the tests
        marked large, which tests/conftest.py runs only with --run_large) or "fast" (`make test-fast`: the tests marked neither slow nor large).
      **kwargs: size, tags and any other py_test attribute.
    """
    native.py_test(
        name = name,
        srcs = srcs + ["//tools/bazel:pytest_main.py"],
        main = "//tools/bazel:pytest_main.py",
        args = srcs + {"default": [], "large": ["--run_large", "-m", "large"], "fast": ["-m", "not slow and not large"]}[tier],
        deps = ["//:bert_tf", "//:test_support"] + deps,
        python_version = "PY3",
        srcs_version = "PY3",
        # No generated __init__.py: pytest puts tests/ on sys.path, so `import pretraining_records` works as in
        # `make test`.
        legacy_create_init = False,
        **kwargs
    )

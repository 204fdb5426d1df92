"""Entry point of the py_test targets in BUILD: runs pytest on the test files Bazel passes as arguments."""

import os
import sys

import pytest

if __name__ == "__main__":
    # The runfiles tree is read-only in the sandbox, so no .pytest_cache; the JUnit XML gives Bazel per-case results.
    args = ["-p", "no:cacheprovider", *sys.argv[1:]]
    if os.environ.get("XML_OUTPUT_FILE"):
        args.append(f"--junitxml={os.environ['XML_OUTPUT_FILE']}")
    if os.environ.get("TESTBRIDGE_TEST_ONLY"):  # bazel test --test_filter=EXPR
        args += ["-k", os.environ["TESTBRIDGE_TEST_ONLY"]]
    code = pytest.main(args)
    # 5: no test of this target's tier in the file (every test of it marked large, one by one): nothing failed.
    sys.exit(0 if code == pytest.ExitCode.NO_TESTS_COLLECTED else code)

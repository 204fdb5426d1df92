"""What `pip install` is told: TensorFlow 2.20 and 2.21 both allowed (the TPU build's newest is 2.20), a `gpu`
extra with TensorFlow's CUDA wheels, and a TPU VM package set that leaves out everything requiring the plain
`tensorflow` package. Read from setup.py's source, so nothing is installed; `make test-tf220` installs the TPU set."""

import ast
import os

import pytest
from packaging.requirements import Requirement

from helpers import REPO

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def setup_lists():
    """setup.py's top-level literal assignments (lists and strings), by name."""
    tree = ast.parse(open(os.path.join(REPO, "setup.py"), encoding="utf-8").read())
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass  # an expression of other names
    return values


def allows(requirement, *versions):
    return [requirement.specifier.contains(v) for v in versions]


def test_tensorflow_2_20_and_2_21_are_allowed_and_the_gpu_extra_brings_cuda():
    lists = setup_lists()
    tensorflow = Requirement(lists["TENSORFLOW"])
    assert allows(tensorflow, "2.19.1", "2.20.0", "2.21.0", "2.22.0") == [False, True, True, False]
    (text,) = [Requirement(r) for r in lists["TENSORFLOW_DEPENDENT"] if r.startswith("tensorflow-text")]
    # 2.21.0 broke keras-hub; the 2.20 line's text is 2.20.x.
    assert allows(text, "2.20.0", "2.20.1", "2.21.0", "2.21.1") == [False, True, False, True]
    source = open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()
    assert 'EXTRAS_REQUIRE["gpu"] = ["tensorflow[and-cuda]>=2.20,<2.22"]' in source
    for pin in ('"tensorflow-serving-api>=2.20,<2.22"', '"tf-keras>=2.20,<2.22"'):
        assert pin in source


def test_tpu_vm_requirements_are_the_tpu_build_and_everything_that_does_not_require_tensorflow():
    lists = setup_lists()
    path = os.path.join(REPO, "requirements-tpu-vm.txt")
    lines = [line.strip() for line in open(path, encoding="utf-8") if line.strip() and not line.startswith("#")]
    assert lines == ["tensorflow-tpu==2.20.*"] + lists["REQUIRES_WITHOUT_TENSORFLOW"]
    names = {Requirement(r).name for r in lists["REQUIRES_WITHOUT_TENSORFLOW"]}
    assert not names & {"tensorflow", "tensorflow-text", "keras-hub", "keras-nlp", "tf-keras"}
    # The Makefile's 2.20 check installs exactly this set, then tensorflow-text and bert_tf without dependencies,
    # and CI runs it.
    makefile = open(os.path.join(REPO, "Makefile"), encoding="utf-8").read()
    assert "pip install -q -r requirements-tpu-vm.txt" in makefile
    assert 'pip install -q --no-deps "tensorflow-text==2.20.*"' in makefile
    assert "make test-tf220" in open(os.path.join(REPO, ".ci", "run"), encoding="utf-8").read()

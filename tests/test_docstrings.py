"""The `>>>` examples in bert_tf's docstrings run, so they cannot drift from the code.

Each module's examples run with its own globals plus a small namespace of the names examples use without importing
them (numpy, keras, ops, tf, BertConfig, the models), in an empty working directory. An example that needs files a
reader would have (a vocab, a corpus, a model directory) is marked `# doctest: +SKIP`. A command module under
bert_tf/cli/ defines absl flags, which are global to a process, so each one with examples runs in a process of its
own.
"""

import doctest
import importlib
import pkgutil

import pytest

import bert_tf

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
def module_names():
    return ["bert_tf"] + sorted(info.name for info in pkgutil.walk_packages(bert_tf.__path__, "bert_tf."))


def namespace():
    import keras
    import numpy as np
    import tensorflow as tf

    from bert_tf.config import BertConfig
    from bert_tf.modeling import BertEncoder, BertPretrainer
    return dict(np=np, keras=keras, ops=keras.ops, tf=tf, bert_tf=bert_tf, BertConfig=BertConfig,
                BertEncoder=BertEncoder, BertPretrainer=BertPretrainer)


@pytest.mark.parametrize("name", module_names())
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = []
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name, globs={**namespace(), **vars(module)}):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)

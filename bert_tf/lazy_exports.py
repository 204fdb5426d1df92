"""Public names of a package imported on first use, so importing the package imports nothing heavy."""

import importlib
import sys


def lazy_exports(package, exports):
    """The `__all__`, `__getattr__` and `__dir__` of a package whose public names (name -> defining module) load on
    first use.

    A package's `__init__.py` that imports its modules eagerly makes `import package.light_module` pay for every
    heavy module beside it (TensorFlow, for most of bert_tf); with this, only the module a name comes from is
    imported, when the name is first read.

    Example:
    >>> __all__, __getattr__, __dir__ = lazy_exports("bert_tf", {"BertConfig": "bert_tf.config"})
    >>> __all__, __getattr__("BertConfig").__name__
    (['BertConfig'], 'BertConfig')
    """

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return sorted(exports), __getattr__, __dir__

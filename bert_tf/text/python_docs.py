"""A second corpus that every Python ships: the docstrings of its own standard library (PSF licence), technical
English unlike the Bible's narrative, a document per module.

A module's document is its module, class and function docstrings in the order `ast.walk` meets them, cut into
prose paragraphs (doctest lines, indented code and reST directives left out) and split into sentences by
`split_sentences`. Python's own tests and tools (`test`, `idlelib`, `lib2to3`, ...) and installed packages are left
out. Python 3.11's library gives about 400 documents, 1.4 MB.
"""

import ast
import os
import sysconfig

from bert_tf.text.sentences import split_sentences

# Tests, tools and installed packages: code about code, or not the standard library.
SKIPPED_DIRECTORIES = frozenset({"test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages",
                                 "turtledemo", "__pycache__", "ensurepip", "pydoc_data"})
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstring_paragraphs(docstring):
    """The prose paragraphs of a docstring, each joined into one line; doctest lines, a paragraph that starts
    indented (code), reST directives and paragraphs under four words are left out.

    >>> docstring_paragraphs("Return the sum.\\n\\nThe result is an int\\nor a float.\\n\\n>>> add(1, 2)\\n3\\n")
    ['The result is an int or a float.']
    """
    paragraphs, lines = [], []
    for line in docstring.expandtabs().splitlines() + [""]:
        stripped = line.strip()
        code = stripped.startswith((">>>", "...", "..", "$ ")) or (line.startswith("    ") and not lines)
        if not stripped or code:
            if lines:
                paragraphs.append(" ".join(lines))
            lines = []
            continue
        lines.append(stripped)
    return [p for p in paragraphs if len(p.split()) >= 4 and not set(p) <= set("=-~*^ ")]


def read_python_docs_modules(stdlib=None):
    """The standard library's documented modules as (dotted name, sentences), in path order.

    Example:
    >>> modules = read_python_docs_modules()  # doctest: +SKIP
    >>> modules[0][0], modules[0][1][0]  # doctest: +SKIP
    ('__future__', 'Record of phased-in incompatible language changes.')
    """
    stdlib = stdlib or sysconfig.get_paths()["stdlib"]
    modules = []
    for root, directories, files in os.walk(stdlib):
        directories[:] = sorted(d for d in directories if d not in SKIPPED_DIRECTORIES)
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(root, name)
            try:
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):  # a few modules of other encodings or syntax
                continue
            sentences = [sentence for node in ast.walk(tree) if isinstance(node, _DOCUMENTED)
                         for paragraph in docstring_paragraphs(ast.get_docstring(node) or "")
                         for sentence in split_sentences(paragraph)]
            if len(sentences) >= 2:
                dotted = os.path.splitext(os.path.relpath(path, stdlib))[0].replace(os.sep, ".")
                modules.append((dotted.removesuffix(".__init__"), sentences))
    return modules


def read_python_docs_documents(stdlib=None):
    """The standard library's modules as documents (lists of sentences), in path order.

    Example:
    >>> documents = read_python_docs_documents()  # doctest: +SKIP
    >>> len(documents), documents[0][0]  # doctest: +SKIP
    (399, 'Record of phased-in incompatible language changes.')
    """
    return [sentences for _, sentences in read_python_docs_modules(stdlib)]

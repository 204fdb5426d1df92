"""Commands run in processes forked from a warm parent: a fork server that has imported TensorFlow, Keras,
tensorflow-text and bert_tf's heavy modules once starts a real child per command, which sets its own argv,
working directory, environment, stdout and stderr and runs `python -m bert_tf.cli.<module>` as `runpy` does. The
child's exit code and output are the user's; what it no longer pays is TensorFlow's import (3-6 s of CPU each).

The parent imports modules only and runs no TensorFlow op, so no thread pool exists when it forks (TensorFlow's own
multi-process tests fork their workers from a warm parent the same way). What a fork cannot give: environment
variables read while TensorFlow or Keras is imported (`IMPORT_TIME_ENV`; `helpers.run_cli` starts a fresh
interpreter when a row sets one), the C++ start-up lines of the import, and a clean interpreter for tests about
start-up itself or signals (those use `helpers.run_cli(..., cold=True)` or `helpers.start_cli`).

Example:
>>> run_warm("vocab", ["--helpshort"], cwd=".", env=dict(os.environ), timeout=60).returncode  # doctest: +SKIP
0
"""

import atexit
import importlib.util
import multiprocessing
import multiprocessing.forkserver
import os
import runpy
import subprocess
import sys
import tempfile
from unittest import mock

# Read when TensorFlow or Keras is imported: a child forked after the import cannot honour a new value.
IMPORT_TIME_ENV = ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS", "KERAS_BACKEND",
                   "TF_USE_LEGACY_KERAS", "CUDA_VISIBLE_DEVICES", "TPU_LOAD_LIBRARY")

_context = None


def _fork_server():
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["warm_imports"])
        # Python 3.11's fork server drops the sys.path it is handed (its `main` takes `sys_path` and never sets it)
        # and ignores a preload it cannot import, so it would fork cold children in silence: it finds warm_imports,
        # which lives beside this file, through PYTHONPATH, set for its start only.
        path = os.pathsep.join(filter(None, (os.path.dirname(os.path.abspath(__file__)), os.environ.get("PYTHONPATH"))))
        with mock.patch.dict(os.environ, PYTHONPATH=path):
            multiprocessing.forkserver.ensure_running()
        _context = context
    return _context


def forked_child_has_imported(module):
    """Whether a child of the warm parent starts with `module` imported (`tensorflow`, when the parent is warm)."""
    process = _fork_server().Process(target=_exit_unless_imported, args=(module,))
    process.start()
    process.join(60)
    return process.exitcode == 0


def _exit_unless_imported(module):
    sys.exit(0 if module in sys.modules else 1)


def run_warm(module, args, cwd, env, timeout):
    """Runs `python -m bert_tf.cli.<module> ARGS` in a child of the warm parent; returns a
    `subprocess.CompletedProcess` (text stdout and stderr) or raises `subprocess.TimeoutExpired`, as
    `subprocess.run` does."""
    argv = [sys.executable, "-m", f"bert_tf.cli.{module}", *args]
    with tempfile.TemporaryDirectory() as scratch:
        stdout, stderr = os.path.join(scratch, "stdout"), os.path.join(scratch, "stderr")
        process = _fork_server().Process(target=_child, args=(module, list(args), cwd, dict(env), stdout, stderr))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(argv, timeout, _read(stdout), _read(stderr))
        return subprocess.CompletedProcess(argv, process.exitcode, _read(stdout), _read(stderr))


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _child(module, args, cwd, env, stdout, stderr):
    """In the forked child: the process a user's `python -m bert_tf.cli.<module> ARGS` would be."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for path, fd in ((stdout, 1), (stderr, 2)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    name = f"bert_tf.cli.{module}"
    sys.argv = [importlib.util.find_spec(name).origin, *args]  # as `python -m` sets it
    code = 0
    try:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = exit_.code
    finally:
        atexit._run_exitfuncs()  # what the interpreter runs at exit (the fork server's child ends with os._exit)
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(code)

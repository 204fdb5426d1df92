"""What many test files need: one tiny BertConfig, one way to run a command as a user would (to its end, or
started and left running for a test that signals or watches it), and the step a run's latest checkpoint holds."""

import collections
import contextlib
import os
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")
# The XLA tools, run by path with the repository on PYTHONPATH (tools/xla/README.md).
TOOLS_XLA = os.path.join(REPO, "tools", "xla")

# H=16, 2 layers, 2 heads, vocab 64, 32 positions: builds and runs a step in well under a second.
TINY = dict(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=32)


def python_path_env(*folders):
    """`os.environ` with `folders` (tests/ if none) first on PYTHONPATH: a child Python started by a test imports the
    tests' own modules (`from test_device_loop import make_trainer`) as pytest lets the test itself, or the package
    from the checkout where it is not installed (`python_path_env(REPO)` for the jax venv)."""
    paths = list(folders or [TESTS]) + [p for p in [os.environ.get("PYTHONPATH")] if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def tiny_config(**overrides):
    """A BertConfig small enough for fast tests, with any field overridden.

    Example:
    >>> tiny_config(hidden_size=32).hidden_size
    32
    """
    from bert_tf.config import BertConfig
    return BertConfig(**{**TINY, **overrides})


def tiny_model_section(**overrides):
    """The `model` section of a pre-training recipe (YAML or `Recipe.from_dict`) for `tiny_config(**overrides)`.

    Example:
    >>> tiny_model_section(num_hidden_layers=1)["num_hidden_layers"], tiny_model_section()["hidden_size"]
    (1, 16)
    """
    return {"preset": "tiny", **TINY, **overrides}


# Commands that hand their work to a runner of other processes (Beam's, with its own logging): run in a child always.
PROCESS_COMMANDS = ("create_pretraining_data_beam",)


def run_cli(module, *args, cwd=None, env=None, timeout=300, process=False):
    """Runs the command `bert-<module>` with ARGS as a user runs it, to its end; returns a
    `subprocess.CompletedProcess` with its exit code and text stdout and stderr.

    In this process by default, through the one function a command runs by (`bert_tf.cli.app.run_command`: parse,
    compose, check, `main(config)`, the exit code and the one-line error a user sees). In a child process
    (`python -m bert_tf.cli.<module>`, the console script: the same function with the device line, TensorFlow
    started quietly and the exit) when `process` is true (say why at the
    call: the process's own output or exit), when `env` is given (it adds to or overrides this process's
    environment), and for the `PROCESS_COMMANDS`. `timeout` (seconds) ends a child and raises
    `subprocess.TimeoutExpired`.

    Example:
    >>> run_cli("vocab", "--vocab_size=x").returncode  # doctest: +SKIP
    2
    """
    args = [str(arg) for arg in args]
    if process or env or module in PROCESS_COMMANDS:
        return subprocess.run(_command(module, args), cwd=cwd or REPO, env={**os.environ, **(env or {})},
                              capture_output=True, text=True, timeout=timeout)
    return _run_in_process(module, args, cwd or REPO)


def _run_in_process(module, args, cwd):
    """`run_cli` in this process: stdout, stderr and absl's log lines (at INFO, as a console script logs) captured;
    the working directory, the log verbosity, the signal handlers (bert-create-pretraining-data installs one for
    SIGTERM) and Keras's dtype policy left as they were."""
    import importlib
    import io

    import keras
    from absl import logging

    from bert_tf.cli.app import run_command

    command = importlib.import_module(f"bert_tf.cli.{module}").COMMAND
    stdout, stderr = io.StringIO(), io.StringIO()
    logging.use_absl_handler()
    handler = logging.get_absl_handler().python_handler
    saved = os.getcwd(), handler.stream, keras.mixed_precision.global_policy(), logging.get_verbosity()
    handlers = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    os.chdir(cwd)
    handler.stream = stderr
    logging.set_verbosity(logging.INFO)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = run_command(command, [command.program, *args], stderr)
    finally:
        os.chdir(saved[0])
        handler.stream = saved[1]
        keras.mixed_precision.set_global_policy(saved[2])
        logging.set_verbosity(saved[3])
        for number, handler_before in handlers.items():
            signal.signal(number, handler_before)
    return subprocess.CompletedProcess([command.program, *args], code, stdout.getvalue(), stderr.getvalue())


def start_cli(module, *args, cwd=None, env=None, output=subprocess.PIPE):
    """Starts `python -m bert_tf.cli.<module> ARGS` in a child process, without waiting: for a test that signals
    the running command (SIGTERM, SIGKILL) or runs several at once (the workers of a cluster).

    Returns the `subprocess.Popen`; stdout and stderr go to `output` (text pipes by default, or
    `subprocess.DEVNULL`).

    Example:
    >>> process = start_cli("pretrain", "--config=demo_cpu", "--model_dir=run")  # doctest: +SKIP
    >>> process.send_signal(signal.SIGTERM); process.communicate()[1]  # doctest: +SKIP
    """
    return subprocess.Popen(_command(module, args), cwd=cwd or REPO, env={**os.environ, **(env or {})},
                            stdout=output, stderr=output, text=True)


def _command(module, args):
    return [sys.executable, "-m", f"bert_tf.cli.{module}", *map(str, args)]


# What `run_demo` returns: where the demo wrote, what it printed, the flags it ran with.
DemoRun = collections.namedtuple("DemoRun", "output_dir stdout stderr flags")


def run_demo(output_dir, flags):
    """Runs the demo into `output_dir`; returns a `DemoRun` (the test fails with its stderr if it fails)."""
    process = subprocess.run([sys.executable, "-m", "bert_tf.demo", f"--output_dir={output_dir}", *flags],
                             capture_output=True, text=True, timeout=2400)
    assert process.returncode == 0, process.stderr[-3000:]
    return DemoRun(output_dir, process.stdout, process.stderr, tuple(flags))


def latest_step(model_dir):
    """The step of the checkpoint the `checkpoint` state file names (what a resumed run restores), or None.

    Example:
    >>> latest_step("no/such/model_dir") is None
    True
    """
    import tensorflow as tf
    latest = tf.train.latest_checkpoint(model_dir)
    return int(latest.rsplit("-", 1)[1]) if latest else None


def original_truncation(len_a, len_b, budget):
    """The lengths A and B keep in the original `truncate_seq_pair`: one token at a time off the longer one (B on a
    tie) until both fit in `budget`.

    Example:
    >>> original_truncation(5, 3, 6)
    (3, 3)
    """
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b

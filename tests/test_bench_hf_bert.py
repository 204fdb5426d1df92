"""bench/bench_hf_bert.py: Hugging Face's BertForPreTraining at the package's presets, beside our step. Its model
has our parameters, one for one (default tier); the whole benchmark runs a tiny step on this CPU without importing
TensorFlow and writes its row (large tier)."""

import json
import subprocess
import sys

import pytest

from bench.bench_hf_bert import build_model, flops_per_sequence, parameter_count, preset_config
from helpers import REPO, python_path_env

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

# Runs the benchmark as its `__main__` (`python -m bench.bench_hf_bert`), then says which TensorFlow or Keras modules
# were imported (transformers looks for TensorFlow without importing it, so a finder's record of attempts would not
# tell).
WATCHED_RUN = """
import runpy, sys
try:
    runpy.run_module("bench.bench_hf_bert", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    code = exit.code
print("imported:", sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras")))
sys.exit(code)
"""


def test_hugging_faces_model_has_our_parameters_one_for_one():
    from bench.synthetic_batch import synthetic_batch
    from bert_tf.config import BertConfig
    from bert_tf.modeling.pretrainer import BertPretrainer

    ours = BertPretrainer(BertConfig.preset("tiny"))
    ours({k: v for k, v in synthetic_batch(30522, 2, 16, 3).items()}, training=False)  # builds every variable
    our_count = sum(int(v.numpy().size) for v in ours.pretraining_variables())
    model, config = build_model("tiny")
    assert parameter_count(model) == our_count == 4_433_468  # the decoder is tied to the embeddings on both sides
    assert (config.hidden_size, config.num_hidden_layers, config.intermediate_size) == (128, 2, 512)
    assert config._attn_implementation == "sdpa"


def test_the_head_at_every_position_is_counted_apart_from_the_packages_flops():
    fields = preset_config("large")
    ours = flops_per_sequence(fields, 128, 20)
    assert round(ours / 1e9, 1) == 240.6  # the package's count for BERT-large at 128 tokens, 20 predictions
    every_position = flops_per_sequence(fields, 128, 20, head_positions=128)
    # 6 x 108 more positions x (H^2 + H V) = 20.9 GFLOP: the head on all 128 tokens is about 9% more work.
    assert round((every_position - ours) / 1e9, 1) == round(6 * 108 * (1024 ** 2 + 1024 * 30522) / 1e9, 1) == 20.9


@pytest.mark.large
def test_a_tiny_step_runs_on_this_cpu_without_tensorflow_and_writes_its_row(tmp_path):
    done = subprocess.run([sys.executable, "-c", WATCHED_RUN, "--preset=tiny", "--seq=16", "--batch=8",
                           "--micro_batch=4", "--preds=4", "--device=cpu", "--warmup=1", "--steps=2",
                           f"--results={tmp_path}", "--run_id=test"], cwd=REPO, env=python_path_env(REPO),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "imported: []"
    (row,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert {k: row[k] for k in ("stack", "variant", "device", "preset", "seq", "batch", "micro_batch", "run_id")} == {
        "stack": "transformers", "variant": "sdpa", "device": "cpu", "preset": "tiny", "seq": 16, "batch": 8,
        "micro_batch": 4, "run_id": "test"}
    assert row["parameter_count"] == 4_433_468 and row["sequences_per_s"] > 0
    assert 9.0 < row["loss"] < 12.0  # masked-LM cross-entropy near ln(30522) = 10.3 plus next-sentence's ln 2
    assert row["head_flops_share"] > 2.0  # tiny: the head dominates, at 16 positions instead of 4

"""bert-export's SavedModels served for real: TensorFlow's session-based C++ loader (TF Serving's path) and
saved_model_cli, in fresh processes without tensorflow-text, give the in-process Keras outputs; the graphs use core
TensorFlow ops only; the reusable-SavedModel attributes are there; bad inputs fail with the limit named."""

import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertPretrainer
from bert_tf.finetuning import BertClassifier, BertSpanQA, BertTokenClassifier
from bert_tf.model_dir import write_model_dir
from bert_tf.serving import (
    CLASSIFIER,
    SPAN_QA,
    TOKEN_CLASSIFIER,
    export_classifier,
    export_span_qa,
    load_encoder_from_saved_model,
    version_dir,
)
from helpers import run_cli, tiny_config
from saved_model_runners import compile_c_runner, run_with_c_loader, run_with_saved_model_cli

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

TOLERANCE = 1e-5
MAX_POSITIONS = 32
LABELS = ["joy", "anger", "fear"]
TAGS = ["O", "B-LOC", "I-LOC", "B-PER"]
TASK_MODELS = (CLASSIFIER, TOKEN_CLASSIFIER, SPAN_QA)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, uncased_vocab):
    """A random tiny model (real uncased vocab) written as a checkpoint dir, exported by the bert-export CLI, plus
    a classifier, a token classifier and a span QA model on the same encoder, exported with export_classifier and
    export_span_qa."""
    root = tmp_path_factory.mktemp("serving")
    keras.utils.set_random_seed(3)
    config = tiny_config(vocab_size=30522, max_position_embeddings=MAX_POSITIONS)
    pretrainer = BertPretrainer(config)
    write_model_dir(str(root / "model"), pretrainer, uncased_vocab)
    # In a process of its own: test_bert_export_prints_no_tensorflow_info_lines reads what the console script prints.
    process = run_cli("export", f"--model_dir={root / 'model'}", f"--output_dir={root / 'out'}", "--max_seq_length=16",
                      process=True)
    assert process.returncode == 0, process.stderr[-3000:]
    paths = dict(line.split(": ", 1) for line in process.stdout.splitlines())
    task_models = {CLASSIFIER: BertClassifier(pretrainer.encoder, num_classes=len(LABELS)),
                   TOKEN_CLASSIFIER: BertTokenClassifier(pretrainer.encoder, num_classes=len(TAGS)),
                   SPAN_QA: BertSpanQA(pretrainer.encoder)}
    out = str(root / "out")
    paths[CLASSIFIER] = export_classifier(task_models[CLASSIFIER], version_dir(out, CLASSIFIER), LABELS)
    paths[TOKEN_CLASSIFIER] = export_classifier(task_models[TOKEN_CLASSIFIER], version_dir(out, TOKEN_CLASSIFIER),
                                                TAGS)
    paths[SPAN_QA] = export_span_qa(task_models[SPAN_QA], version_dir(out, SPAN_QA))
    return {"root": root, "pretrainer": pretrainer, "task_models": task_models, "paths": paths,
            "export_stderr": process.stderr}


@pytest.fixture(scope="module")
def c_runner(tmp_path_factory):
    return compile_c_runner(str(tmp_path_factory.mktemp("c_runner")))


def example_inputs(seed=0, lengths=(12, 7, 3), vocab_size=30522):
    """Three sequences of 12 positions with padding (rows of 12, 7 and 3 real tokens) and both segment ids."""
    rng = np.random.default_rng(seed)
    seq = max(lengths)
    mask = (np.arange(seq)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(1000, vocab_size, (len(lengths), seq)).astype(np.int32) * mask
    types = ((np.arange(seq)[None, :] >= np.array(lengths)[:, None] // 2) * mask).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


POSITIONS = np.array([[1, 5, 11], [0, 2, 6], [1, 2, 0]], np.int32)


def keras_outputs(exported, model_name, signature):
    """The in-process Keras outputs a signature must reproduce."""
    x = example_inputs()
    pretrainer = exported["pretrainer"]
    if model_name in (CLASSIFIER, TOKEN_CLASSIFIER):
        logits = exported["task_models"][model_name](x, training=False)
        probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits, -1))
        return x, {"probabilities": probabilities, "label_ids": probabilities.argmax(-1).astype(np.int32)}
    if model_name == SPAN_QA:
        outputs = exported["task_models"][SPAN_QA](x, training=False)
        return x, {name: keras.ops.convert_to_numpy(value) for name, value in outputs.items()}
    if signature == "mlm":
        x = dict(x, masked_lm_positions=POSITIONS)
        return x, {"mlm_logits": keras.ops.convert_to_numpy(pretrainer(x, training=False)["mlm_logits"])}
    out = pretrainer.encoder(x, training=False)
    want = {k: keras.ops.convert_to_numpy(out[k]) for k in ("pooled_output", "sequence_output")}
    return x, dict(want, default=want["pooled_output"])


def max_diffs(got, want):
    assert sorted(got) == sorted(want)
    assert all(np.shape(got[k]) == want[k].shape for k in want), {k: np.shape(v) for k, v in got.items()}
    return {k: float(np.max(np.abs(np.asarray(got[k], np.float64) - want[k]))) for k in want}


CASES = [("encoder", "serving_default"), ("encoder_mlm", "serving_default"), ("encoder_mlm", "mlm"),
         (CLASSIFIER, "serving_default"), (TOKEN_CLASSIFIER, "serving_default"), (SPAN_QA, "serving_default")]


@pytest.mark.parametrize("model_name,signature", CASES)
def test_signatures_in_process_give_the_keras_outputs(exported, model_name, signature):
    x, want = keras_outputs(exported, model_name, signature)
    loaded = tf.saved_model.load(exported["paths"][model_name])
    got = {k: v.numpy() for k, v in loaded.signatures[signature](**{k: tf.constant(v) for k, v in x.items()}).items()}
    diffs = max_diffs(got, want)
    print(model_name, signature, "in-process max |diff|", diffs)
    assert max(diffs.values()) <= TOLERANCE


@pytest.mark.parametrize("model_name,signature", CASES)
def test_tensorflow_session_loader_gives_the_keras_outputs(exported, c_runner, tmp_path, model_name, signature):
    x, want = keras_outputs(exported, model_name, signature)
    got, process = run_with_c_loader(c_runner, exported["paths"][model_name], signature, x, str(tmp_path))
    assert got is not None, process.stderr[-3000:]
    diffs = max_diffs(got, want)
    print(model_name, signature, "C session loader max |diff|", diffs)
    assert max(diffs.values()) <= TOLERANCE


def test_saved_model_cli_run_gives_the_keras_outputs(exported, tmp_path):
    x, want = keras_outputs(exported, "encoder_mlm", "mlm")
    got = run_with_saved_model_cli(exported["paths"]["encoder_mlm"], "mlm", x, str(tmp_path))
    diffs = max_diffs(got, want)
    print("encoder_mlm mlm saved_model_cli max |diff|", diffs)
    assert max(diffs.values()) <= TOLERANCE


def test_bert_export_prints_no_tensorflow_info_lines(exported):
    for words in ("Assets written to", "Writing fingerprint", "Sharding callback duration", "unsupported characters"):
        assert words not in exported["export_stderr"], exported["export_stderr"]
    # What remains: the device line and the command's own progress (absl lines logged from bert_tf's export.py).
    lines = exported["export_stderr"].strip().splitlines()
    assert lines[0] == "bert-export: running on the CPU (no GPU found)"
    assert all(re.match(r"I\d{4} [\d:.]+ +\d+ export\.py:\d+\] Wrote ", line) for line in lines[1:]), lines
    assert len(lines) == 4


@pytest.mark.parametrize("model_name", TASK_MODELS)
def test_bert_export_writes_the_serving_model_of_a_keras_task_model(exported, c_runner, tmp_path, model_name):
    """A fine-tuned model saved as .keras (a classifier with labels.txt beside it) -> <model_name>/<version>."""
    exported["task_models"][model_name].save(str(tmp_path / "best.keras"))
    labels = {CLASSIFIER: LABELS, TOKEN_CLASSIFIER: TAGS}.get(model_name)
    if labels:
        (tmp_path / "labels.txt").write_text("".join(f"{label}\n" for label in labels))
    process = run_cli("export", f"--keras_model={tmp_path / 'best.keras'}", f"--output_dir={tmp_path / 'out'}",
                      "--version=7")
    assert process.returncode == 0, process.stderr[-3000:]
    path = str(tmp_path / "out" / model_name / "7")
    assert process.stdout.strip() == f"{model_name}: {path}"
    assert os.path.exists(os.path.join(path, "assets", "labels.txt")) == bool(labels)
    if labels:
        with open(os.path.join(path, "assets", "labels.txt")) as f:
            assert f.read().split() == labels
    x, want = keras_outputs(exported, model_name, "serving_default")
    got, process = run_with_c_loader(c_runner, path, "serving_default", x, str(tmp_path))
    assert got is not None, process.stderr[-3000:]
    assert max(max_diffs(got, want).values()) <= TOLERANCE


OP_LISTER = """
import json, sys
from bert_tf.serving.graph_ops import non_core_ops, saved_model_ops
result = {path: {"all": sorted(saved_model_ops(path)), "non_core": non_core_ops(path)} for path in sys.argv[1:]}
result["tensorflow_text_imported"] = "tensorflow_text" in sys.modules
print(json.dumps(result))
"""


def test_serving_graphs_use_core_tensorflow_ops_only(exported):
    """Every op of each graph and its function library is a core TensorFlow op, checked in a process that never
    imported tensorflow_text; the preprocessing model (tensorflow-text) is the control that the check can fail."""
    paths = exported["paths"]
    process = subprocess.run([sys.executable, "-c", OP_LISTER] + list(paths.values()), capture_output=True,
                             text=True, timeout=120)
    assert process.returncode == 0, process.stderr[-3000:]
    result = json.loads(process.stdout.splitlines()[-1])
    assert result.pop("tensorflow_text_imported") is False
    for name in ("encoder", "encoder_mlm") + TASK_MODELS:
        ops = result[paths[name]]
        assert result[paths[name]]["non_core"] == [], name
        # The ops inside the functions are listed too, not only the outer call.
        assert {"BatchMatMulV2", "Tanh", "GatherV2", "Softmax", "Assert"} <= set(ops["all"]), ops["all"]
    assert result[paths["preprocessing"]]["non_core"] == [
        "NormalizeUTF8", "RegexSplitWithOffsets", "WordpieceTokenizeWithOffsets"]


def with_ids(name, change, lengths=(4,)):
    """example_inputs with `change(array)` applied to input `name` (masked_lm_positions added for the mlm)."""
    x = dict(example_inputs(lengths=lengths), masked_lm_positions=np.array([[1]], np.int32))
    x[name] = change(x[name].copy())
    return x


def set_first(value):
    def change(array):
        array.flat[1 if array.size > 1 else 0] = value
        return array
    return change


# (what is wrong, the inputs, which model, the words the error must hold). The upper bounds, the lower bounds,
# the rank and the length, for the encoder, the mlm signature and a task model alike.
BAD_INPUTS = [
    ("too long", example_inputs(lengths=(MAX_POSITIONS + 8,)), "encoder",
     "longer than the max_position_embeddings=32 of this model: truncate each sequence to at most 32"),
    ("id over the vocab", with_ids("input_word_ids", set_first(30522)), "encoder",
     "input_word_ids holds an id >= vocab_size=30522"),
    ("negative word id", with_ids("input_word_ids", set_first(-1)), "encoder",
     "input_word_ids holds a negative id"),
    ("negative type id", with_ids("input_type_ids", set_first(-1)), "encoder",
     "input_type_ids holds a negative id"),
    ("type id over the table", with_ids("input_type_ids", set_first(2)), CLASSIFIER,
     "input_type_ids holds an id >= type_vocab_size=2"),
    ("rank 1", {k: v[0] for k, v in example_inputs(lengths=(4,)).items()}, "encoder",
     "input_word_ids must be a rank-2 int32 tensor [batch, seq_length]"),
    ("word ids alone rank 1", with_ids("input_word_ids", lambda a: a[0]), "encoder",
     "input_word_ids must be a rank-2 int32 tensor [batch, seq_length]"),
    ("rank 3", {k: v[None] for k, v in example_inputs(lengths=(4,)).items()}, "encoder",
     "input_word_ids must be a rank-2 int32 tensor [batch, seq_length]"),
    ("word ids alone rank 3", with_ids("input_word_ids", lambda a: a[None]), "encoder_mlm",
     "input_word_ids must be a rank-2 int32 tensor [batch, seq_length]"),
    ("positions rank 1", with_ids("masked_lm_positions", lambda a: a[0]), "encoder_mlm",
     "masked_lm_positions must be a rank-2 int32 tensor"),
    ("zero length", {k: v[:, :0] for k, v in example_inputs(lengths=(4,)).items()}, SPAN_QA,
     "input_word_ids has no tokens (seq_length 0)"),
    ("mask of another shape", with_ids("input_mask", lambda a: a[:, :2]), TOKEN_CLASSIFIER,
     "input_mask must have the shape of input_word_ids"),
    ("position past the sequence", with_ids("masked_lm_positions", set_first(4)), "encoder_mlm",
     "masked_lm_positions holds a position >= the sequence length"),
    ("negative position", with_ids("masked_lm_positions", set_first(-1)), "encoder_mlm",
     "masked_lm_positions holds a negative id"),
]


@pytest.mark.parametrize("case,x,model_name,message", BAD_INPUTS, ids=[case[0] for case in BAD_INPUTS])
def test_bad_requests_fail_with_a_named_assertion(exported, c_runner, tmp_path, case, x, model_name, message):
    """Through the Python loader and TF Serving's session loader (neither checks a feed against the declared
    [None, None], so rank and length are checked in the graph, by checks that TensorFlow's shape folding keeps)."""
    signature = "mlm" if model_name == "encoder_mlm" else "serving_default"
    x = {k: v for k, v in x.items() if signature == "mlm" or k != "masked_lm_positions"}
    loaded = tf.saved_model.load(exported["paths"][model_name])
    with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(message)):
        loaded.signatures[signature](**{k: tf.constant(v) for k, v in x.items()})
    got, process = run_with_c_loader(c_runner, exported["paths"][model_name], signature, x, str(tmp_path))
    assert got is None and process.returncode == 1
    assert message in process.stderr, process.stderr[-2000:]


def test_call_and_mlm_take_int64_ids_cast_to_int32(exported):
    """`__call__` and `.mlm` accept int64 ids (what tf.train.Example features and numpy give) as int32; an int64
    id beyond int32 stays out of range (no wrap-around) and fails the vocab check. Signatures take int32 only."""
    loaded = tf.saved_model.load(exported["paths"]["encoder"])
    x = dict(example_inputs(), masked_lm_positions=POSITIONS)
    as_int64 = {k: tf.constant(v, tf.int64) for k, v in x.items()}
    encoder_inputs = {k: v for k, v in as_int64.items() if k != "masked_lm_positions"}
    _, want = keras_outputs(exported, "encoder", "serving_default")
    assert max(max_diffs({k: loaded(encoder_inputs)[k].numpy() for k in want}, want).values()) <= TOLERANCE
    _, want_mlm = keras_outputs(exported, "encoder_mlm", "mlm")
    got_mlm = loaded.mlm(as_int64)["mlm_logits"].numpy()
    assert np.max(np.abs(got_mlm - want_mlm["mlm_logits"])) <= TOLERANCE
    wrapping = dict(encoder_inputs, input_word_ids=tf.fill([1, 4], tf.constant(2**32 + 5, tf.int64)))
    wrapping = {k: v[:1, :4] for k, v in wrapping.items()}
    with pytest.raises(tf.errors.InvalidArgumentError, match="input_word_ids holds an id >= vocab_size=30522"):
        loaded(wrapping)


def test_encoder_has_mlm_but_serves_only_serving_default(exported):
    """TF Hub's encoders have `.mlm` (so `hub.load(encoder).mlm(...)` works); `mlm` as a signature is
    encoder_mlm's, so a stock TF Serving of the encoder serves what it did."""
    loaded = tf.saved_model.load(exported["paths"]["encoder"])
    assert sorted(loaded.signatures) == ["serving_default"]
    assert len(loaded.mlm.trainable_variables) == len(loaded.trainable_variables) + 5


def test_encoder_is_a_reusable_savedmodel_with_its_assets(exported, uncased_vocab):
    """The TF Hub conventions: __call__(inputs, training), variables, trainable_variables, regularization_losses,
    vocab and config assets, do_lower_case; dropout runs only with training=True."""
    path = exported["paths"]["encoder"]
    encoder = exported["pretrainer"].encoder
    loaded = tf.saved_model.load(path)
    # Dropout RNG states are named by a process-wide counter (seed_generator_N), which differs between the
    # exporting process and this one; the weights keep their TF1 names exactly.
    def names(items):
        return [re.sub(r"^seed_generator_\d+/", "seed_generator/", name) for name in items]

    assert names(v.name for v in loaded.variables) == names(f"{w.path}:0" for w in encoder.variables)
    assert [v.name for v in loaded.trainable_variables] == [f"{w.path}:0" for w in encoder.trainable_weights]
    assert len(loaded.trainable_variables) == 39 and list(loaded.regularization_losses) == []
    assert bool(loaded.do_lower_case.numpy()) is True
    with open(os.path.join(path, "assets", "vocab.txt")) as a, open(uncased_vocab) as b:
        assert a.read() == b.read()
    assert BertConfig.from_json_file(os.path.join(path, "assets", "bert_config.json")) == (
        encoder.config)
    x = {k: tf.constant(v) for k, v in example_inputs().items()}
    inference = loaded(x, training=False)
    assert len(inference["encoder_outputs"]) == 2
    want = keras.ops.convert_to_numpy(encoder(x, training=False)["sequence_output"])
    assert np.max(np.abs(inference["sequence_output"].numpy() - want)) <= TOLERANCE
    first, second = (loaded(x, training=True)["pooled_output"].numpy() for _ in range(2))
    assert np.max(np.abs(first - second)) > 1e-3
    assert np.array_equal(loaded(x, training=False)["pooled_output"].numpy(), inference["pooled_output"].numpy())


def test_saved_model_reloads_as_a_native_encoder(exported, tmp_path):
    encoder, vocab_file, do_lower_case = load_encoder_from_saved_model(exported["paths"]["encoder"])
    x = example_inputs()
    got = keras.ops.convert_to_numpy(encoder(x)["sequence_output"])
    want = keras.ops.convert_to_numpy(exported["pretrainer"].encoder(x)["sequence_output"])
    assert np.array_equal(got, want) and do_lower_case and vocab_file.endswith("assets/vocab.txt")
    with pytest.raises(FileNotFoundError, match="no assets/bert_config.json"):
        load_encoder_from_saved_model(exported["paths"][CLASSIFIER])


def test_bert_export_refuses_to_overwrite_a_version_and_a_wrong_vocab(exported, tmp_path):
    root = exported["root"]
    process = run_cli("export", f"--model_dir={root / 'model'}", f"--output_dir={root / 'out'}")
    assert process.returncode == 2 and "already holds a SavedModel" in process.stderr
    assert "export to a new version number" in process.stderr
    small_vocab = tmp_path / "vocab.txt"
    small_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n")
    process = run_cli("export", f"--model_dir={root / 'model'}", f"--output_dir={tmp_path / 'out'}",
                      f"--vocab_file={small_vocab}")
    assert process.returncode == 2
    assert "has 6 tokens but the model's vocab_size is 30522" in process.stderr
    assert not os.path.exists(tmp_path / "out")
    # A packing length the model has no positions for is refused before any model is written, so the corrected
    # rerun is not blocked by a half export.
    process = run_cli("export", f"--model_dir={root / 'model'}", f"--output_dir={tmp_path / 'out'}",
                      "--max_seq_length=600")
    assert process.returncode == 2
    assert "seq_length=600 must lie in [3, max_position_embeddings=32]" in process.stderr
    assert not os.path.exists(tmp_path / "out")

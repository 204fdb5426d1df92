"""Small pre-training TFRecords in the original format for the training tests (written with tf.train.Example)."""

import numpy as np
import tensorflow as tf
import yaml

from helpers import tiny_model_section

VOCAB_SIZE = 64
FIRST_WORD_ID = 5  # 0-4: [PAD] [UNK] [CLS] [SEP] [MASK]


def vocab_tokens(size=VOCAB_SIZE):
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(size - FIRST_WORD_ID)]


def write_vocab(path, size=VOCAB_SIZE):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab_tokens(size)) + "\n")
    return str(path)


def make_instance(rng, seq, pred, full_predictions=False, vocab_size=VOCAB_SIZE):
    """One record's values (v1 names). Each sentence is a run of one repeated word drawn from a Zipf-like
    distribution, so the masked words are predictable from their frequency first, then from their neighbours, and
    a model that learns shows it within a few dozen steps.

    With `full_predictions` every instance has exactly `pred` real predictions, so the masked-LM loss of a batch
    split in parts is the mean of the parts' losses (used to compare replicas and micro-batches exactly).
    """
    length = seq if full_predictions else int(rng.integers(max(pred + 3, seq // 2), seq + 1))
    split = int(rng.integers(2, length - 2))
    ranks = np.arange(1, vocab_size - FIRST_WORD_ID + 1)
    word_a, word_b = FIRST_WORD_ID + rng.choice(len(ranks), 2, p=(1 / ranks) / np.sum(1 / ranks))
    ids = np.zeros(seq, np.int64)
    ids[:length] = np.where(np.arange(length) < split, word_a, word_b)
    ids[0], ids[split], ids[length - 1] = 2, 3, 3
    candidates = np.array([i for i in range(1, length - 1) if i != split])
    num = pred if full_predictions else int(rng.integers(1, pred + 1))
    positions = np.zeros(pred, np.int64)
    positions[:num] = np.sort(rng.choice(candidates, num, replace=False))
    labels = np.zeros(pred, np.int64)
    labels[:num] = ids[positions[:num]]
    ids[positions[:num]] = 4
    return {"input_ids": ids, "input_mask": (np.arange(seq) < length).astype(np.int64),
            "segment_ids": ((np.arange(seq) > split) & (np.arange(seq) < length)).astype(np.int64),
            "masked_lm_positions": positions, "masked_lm_ids": labels,
            "masked_lm_weights": (np.arange(pred) < num).astype(np.float32),
            "next_sentence_labels": np.array([int(word_a != word_b and rng.random() < 0.5)], np.int64)}


def serialize(values):
    feature = {}
    for name, value in values.items():
        feature[name] = (tf.train.Feature(float_list=tf.train.FloatList(value=value)) if value.dtype == np.float32
                         else tf.train.Feature(int64_list=tf.train.Int64List(value=value)))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_records(path, num_records, seq, pred, seed=0, full_predictions=False):
    rng = np.random.default_rng(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(num_records):
            writer.write(serialize(make_instance(rng, seq, pred, full_predictions)))
    return str(path)


def feature_batches(num_batches, batch_size, seq, pred, seed=0, full_predictions=True):
    """Batches of model features as NumPy dicts (what `pretraining_dataset` yields), for loops fed directly."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(num_batches):
        rows = [make_instance(rng, seq, pred, full_predictions) for _ in range(batch_size)]
        batch = {name: np.stack([r[name] for r in rows]) for name in rows[0]}
        batches.append({"input_word_ids": batch["input_ids"].astype(np.int32),
                        "input_mask": batch["input_mask"].astype(np.int32),
                        "input_type_ids": batch["segment_ids"].astype(np.int32),
                        "masked_lm_positions": batch["masked_lm_positions"].astype(np.int32),
                        "masked_lm_ids": batch["masked_lm_ids"].astype(np.int32),
                        "masked_lm_weights": batch["masked_lm_weights"],
                        "next_sentence_labels": batch["next_sentence_labels"].astype(np.int32)})
    return batches


def write_two_phase_recipe(data, name, steps, save_every, dropout):
    """A recipe of the tiny model with two phases (16 then 32 tokens), as the paper's has (128 then 512), written to
    `data["root"]/<name>.yaml`; `steps` are the phases' steps."""
    recipe = {
        "name": name,
        "model": tiny_model_section(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout),
        "train_batch_size": 8, "num_train_steps": sum(steps), "num_warmup_steps": 10, "learning_rate": 3e-3,
        "save_checkpoints_steps": save_every, "iterations_per_loop": 10,
        "phases": [{"name": "seq16", "num_steps": steps[0], "max_seq_length": 16, "max_predictions_per_seq": 4},
                   {"name": "seq32", "num_steps": steps[1], "max_seq_length": 32, "max_predictions_per_seq": 6}]}
    path = data["root"] / f"{name}.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return str(path)


def pretrain_flags(data, recipe, model_dir, *extra):
    """The `bert-pretrain` flags of a run of `recipe` on the two phases' records (`data["seq16"]`, `["seq32"]`)."""
    return [f"--config={recipe}", f"--model_dir={model_dir}", f"--input_file={data['seq16']}",
            f"--input_file={data['seq32']}", f"--vocab_file={data['vocab']}", "--peak_tflops=1", *extra]


def one_phase_tiny_recipe(root, name, seq=16, pred=4, with_eval=False):
    """A recipe's mapping: a one-block tiny model, 20 steps of batch 4 in one phase of `seq`/`pred` on 64 records
    written under `root` (and evaluated on them with `with_eval`), five steps a loop, no checkpoint before the end."""
    records = write_records(root / "train.tfrecord", 64, seq, pred)
    recipe = {
        "name": name,
        "model": {"preset": "tiny", "hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2,
                  "num_hidden_layers": 1, "max_position_embeddings": seq},
        "vocab_file": write_vocab(root / "vocab.txt"), "train_batch_size": 4, "num_train_steps": 20,
        "num_warmup_steps": 2, "save_checkpoints_steps": 1000, "iterations_per_loop": 5,
        "phases": [{"name": f"seq{seq}", "num_steps": 20, "max_seq_length": seq, "max_predictions_per_seq": pred,
                    "input_file": records}]}
    if with_eval:
        recipe["eval"] = {"input_file": records, "eval_batch_size": 8, "max_eval_steps": 2}
    return recipe

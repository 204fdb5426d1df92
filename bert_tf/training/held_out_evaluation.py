"""`bert-evaluate`'s work: a model directory's held-out metrics on any record file, at the file's own length, beside
the unigram baseline and the order-blind one (the plateau, `word_order_baseline.py`), written to a file of its own
(never the run's `eval_results.txt`)."""

import json
import os

import tensorflow as tf
from absl import logging

from bert_tf.atomic_output import make_directories, write_text_atomically
from bert_tf.errors import InputError
from bert_tf.inputs.input_spec import InputSpec
from bert_tf.inputs.pretraining_dataset import pretraining_dataset
from bert_tf.model_dir import latest_checkpoint, read_config, restore_weights, vocab_path
from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.records.checker import check_record_files
from bert_tf.records.schema import read_schema
from bert_tf.text.file_patterns import expand_file_patterns
from bert_tf.text.vocabulary import Vocabulary
from bert_tf.training.evaluation import evaluate, unigram_baseline
from bert_tf.training.recipe_history import latest_recipe
from bert_tf.training.word_order_baseline import baseline_line, order_blind_baseline, plateau_line

EVALUATIONS_DIR = "evaluations"


def default_output_file(model_dir, eval_input_file):
    """Where `bert-evaluate` writes by default: `<model_dir>/evaluations/<first eval file's name>.json`.

    >>> default_output_file("runs/demo", "data/heldout-seq128.tfrecord")
    'runs/demo/evaluations/heldout-seq128.json'
    """
    first = eval_input_file.split(",")[0].rstrip("/")
    stem = os.path.basename(first).replace("*", "all").split(".")[0] or "eval"
    return os.path.join(model_dir, EVALUATIONS_DIR, f"{stem}.json")


def evaluate_model_dir(model_dir, eval_input_file, baseline_input_file=None, batch_size=32, max_steps=None):
    """Held-out metrics of the latest checkpoint of `model_dir` (from bert-pretrain or bert-convert) on
    `eval_input_file`, read at the records' own lengths, with the unigram and the order-blind baselines.

    The unigram baseline is the accuracy of always predicting the most frequent masked token of `baseline_input_file`
    (the training records, as the demo computes it); without one, of the eval records themselves, which is the
    best constant guess for them (slightly above what one learnt from training data would score). The order-blind
    baseline (`word_order_baseline.order_blind_baseline`) is fitted on the same records and scored on the eval
    records: a model within `PLATEAU_MARGIN` of it sits on the plateau.
    Next-sentence metrics come only when the model was trained with that loss (its recipe says so; a converted
    directory has no recipe and keeps its head).

    Returns a dict: the metrics of `evaluation.evaluate`, `unigram_baseline`, `unigram_baseline_token`,
    `order_blind_baseline` (None for packed records), `baseline_source`, `global_step`, `checkpoint`,
    `eval_input_file`, `max_seq_length`, `max_predictions_per_seq`.

    Example:
    >>> evaluate_model_dir("runs/demo", "data/heldout-seq128.tfrecord")["masked_lm_accuracy"]  # doctest: +SKIP
    0.31
    """
    if not tf.io.gfile.isdir(model_dir):
        raise InputError(f"--model_dir {model_dir} does not exist or is not a directory: pass a directory written "
                         f"by bert-pretrain or bert-convert.")
    config = read_config(model_dir)
    checkpoint = latest_checkpoint(model_dir)
    files = expand_file_patterns(eval_input_file, "eval_input_file")
    schema = read_schema(files)
    seq, pred = schema.max_seq_length, schema.max_predictions_per_seq
    if seq > config.max_position_embeddings:
        raise InputError(f"The records of {eval_input_file} have {seq} tokens but the model in {model_dir} has "
                         f"max_position_embeddings={config.max_position_embeddings}: pass records of at most "
                         f"{config.max_position_embeddings} tokens (bert-create-pretraining-data --max_seq_length).")
    vocab_file = vocab_path(model_dir)
    vocab = Vocabulary.from_file(vocab_file) if vocab_file else None
    check_record_files(files, seq, pred, config.vocab_size, config.type_vocab_size, vocab=vocab)
    recipe = latest_recipe(model_dir) or {}
    use_next_sentence = bool(recipe.get("use_next_sentence", True))
    model = BertPretrainer(config, use_next_sentence=use_next_sentence)
    if not restore_weights(model, checkpoint):
        raise InputError(f"{model_dir} holds an encoder without the pre-training heads (converted from an "
                         f"encoder-only model): its masked-LM accuracy would be that of a random head. Pass a "
                         f"directory with the heads (bert-pretrain, or bert-convert of a checkpoint that has them).")
    dataset = pretraining_dataset(InputSpec(files, seq, pred, batch_size, is_training=False, seed=0,
                                            drop_remainder=False))
    results = evaluate(model, dataset, max_steps, batch_size=batch_size)
    baseline_files = expand_file_patterns(baseline_input_file, "baseline_input_file") if baseline_input_file \
        else files
    baseline, token = unigram_baseline(baseline_files, files)
    order_blind = order_blind_baseline(baseline_files, files)
    step = int(checkpoint.rsplit("-", 1)[1])
    results.update(unigram_baseline=baseline, unigram_baseline_token=vocab.tokens[token] if vocab else token,
                   order_blind_baseline=order_blind and order_blind["accuracy"],
                   baseline_source="baseline_input_file" if baseline_input_file else "eval_input_file",
                   global_step=step, checkpoint=checkpoint, eval_input_file=eval_input_file, max_seq_length=seq,
                   max_predictions_per_seq=pred)
    return results


def write_results(results, path):
    """Writes `results` as JSON to `path` (its folder made); returns the path."""
    folder = os.path.dirname(path)
    if folder:
        make_directories(folder)
    write_text_atomically(path, json.dumps(results, indent=2) + "\n")
    logging.info("Wrote %s", path)
    return path


def results_lines(results):
    """What `bert-evaluate` prints: the accuracies beside the baselines, and a line naming the plateau when the
    model sits on it.

    >>> print("\\n".join(results_lines({"masked_lm_accuracy": 0.31, "unigram_baseline": 0.08,
    ...     "order_blind_baseline": 0.15,
    ...     "unigram_baseline_token": ",", "baseline_source": "eval_input_file", "global_step": 300,
    ...     "eval_input_file": "h.tfrecord", "max_seq_length": 32, "max_predictions_per_seq": 5,
    ...     "masked_lm_loss": 4.1, "eval_batches": 3})))
    held-out masked-LM accuracy 0.3100 (loss 4.1) at step 300 on h.tfrecord (32 tokens, 5 predictions, 3 batches)
    unigram baseline 0.0800: always ',' (the most frequent masked token of the eval records themselves)
    order-blind baseline 0.1500: what a model that ignores word order scores (a bag of the record's words)
    """
    source = ("the training records (--baseline_input_file)" if results["baseline_source"] == "baseline_input_file"
              else "the eval records themselves")
    lines = [f"held-out masked-LM accuracy {results['masked_lm_accuracy']:.4f} (loss {results['masked_lm_loss']:.4g}) "
             f"at step {results['global_step']} on {results['eval_input_file']} ({results['max_seq_length']} "
             f"tokens, {results['max_predictions_per_seq']} predictions, {results['eval_batches']} batches)",
             f"unigram baseline {results['unigram_baseline']:.4f}: always {results['unigram_baseline_token']!r} "
             f"(the most frequent masked token of {source})"]
    order_blind = results.get("order_blind_baseline")
    if order_blind is not None:
        lines.append(baseline_line({"accuracy": order_blind}))
        plateau = plateau_line(results["masked_lm_accuracy"], {"accuracy": order_blind})
        if plateau:
            lines.append(plateau)
    if "next_sentence_accuracy" in results:
        lines.append(f"held-out next-sentence accuracy {results['next_sentence_accuracy']:.4f} "
                     f"(loss {results['next_sentence_loss']:.4g})")
    return lines

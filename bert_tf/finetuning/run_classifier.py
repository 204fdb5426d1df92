"""Fine-tuning a `BertClassifier` with Keras fit: dev accuracy (and F1 for two classes) after every epoch, the
best epoch kept, then the serving models exported. What `bert-finetune` runs."""

import collections
import dataclasses
import json
import math
import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.atomic_output import check_output_directory, write_text_atomically
from bert_tf.errors import InputError, NonFiniteLossError
from bert_tf.finetuning.classifier import BertClassifier
from bert_tf.finetuning.features import encode_texts
from bert_tf.finetuning.optimizer import create_finetuning_optimizer

BEST_MODEL, LABELS_FILE, RESULTS_FILE = "best.keras", "labels.txt", "dev_results.json"


@dataclasses.dataclass
class FinetuningResult:
    """What a run gave: per-epoch dev metrics, the best epoch, the majority-class baseline, the written paths.

    Example:
    >>> result.epochs[0], result.best_epoch, result.majority_baseline  # doctest: +SKIP
    ({'accuracy': 0.834, 'f1': 0.817, 'epoch': 1}, 3, 0.5)
    """

    epochs: list
    best_epoch: int
    best_accuracy: float
    majority_baseline: float
    paths: dict


def dev_metrics(labels, predictions, num_classes):
    """Accuracy, and for two classes the F1 of class 1 (the second label in sorted order)."""
    metrics = {"accuracy": float(np.mean(labels == predictions))}
    if num_classes == 2:
        true_pos = np.sum((predictions == 1) & (labels == 1))
        precision = true_pos / max(np.sum(predictions == 1), 1)
        recall = true_pos / max(np.sum(labels == 1), 1)
        metrics["f1"] = float(2 * precision * recall / (precision + recall)) if true_pos else 0.0
    return metrics


class FiniteLossGuard(keras.callbacks.Callback):
    """Stops `fit` with `NonFiniteLossError` at the first step whose loss is NaN or infinite (e.g. a learning rate
    far too high), so no model of that run is kept or exported.

    Example:
    >>> model.fit(features, labels, callbacks=[FiniteLossGuard()])  # doctest: +SKIP
    """

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            raise NonFiniteLossError(
                f"The fine-tuning loss became {float(loss)} at step {int(self.model.optimizer.iterations)}: nothing "
                f"was exported. Lower --learning_rate (the paper's range is 2e-5 to 5e-5) and check the inputs.")


class DevEvaluation(keras.callbacks.Callback):
    """After each epoch: prints `dev accuracy: 0.xxxx` (and `dev f1`), keeps the best weights in memory and on
    disk as `best.keras`.

    An epoch whose training loss or dev logits are not finite is reported but never kept.

    Example:
    >>> evaluation = DevEvaluation(dev_features, dev_labels, num_classes=2, batch_size=64,
    ...                            best_path="best.keras")  # doctest: +SKIP
    >>> model.fit(train_features, train_labels, epochs=3, callbacks=[evaluation])  # doctest: +SKIP
    >>> model.set_weights(evaluation.best_weights)  # doctest: +SKIP
    """

    def __init__(self, features, labels, num_classes, batch_size, best_path, after_progress_bar=False):
        super().__init__()
        # Keras draws the epoch's last progress-bar update after the callbacks run, on the same line.
        self.line_start = "\n" if after_progress_bar else ""
        self.features, self.labels = features, labels
        self.num_classes, self.batch_size, self.best_path = num_classes, batch_size, best_path
        self.history, self.best_accuracy, self.best_epoch, self.best_weights = [], -1.0, 0, None

    def on_epoch_end(self, epoch, logs=None):
        logits = self.model.predict(self.features, batch_size=self.batch_size, verbose=0)
        finite = np.all(np.isfinite(logits)) and math.isfinite(float((logs or {}).get("loss", 0.0)))
        metrics = dev_metrics(self.labels, np.argmax(logits, axis=-1), self.num_classes)
        metrics["epoch"] = epoch + 1
        self.history.append(metrics)
        line = f"{self.line_start}epoch {epoch + 1}: dev accuracy: {metrics['accuracy']:.4f}"
        if "f1" in metrics:
            line += f" dev f1: {metrics['f1']:.4f}"
        print(line, flush=True)
        if finite and metrics["accuracy"] > self.best_accuracy:
            self.best_accuracy, self.best_epoch = metrics["accuracy"], epoch + 1
            self.best_weights = self.model.get_weights()
            self.model.save(self.best_path)


def label_ids(labels, label_names, source):
    index = {name: i for i, name in enumerate(label_names)}
    unknown = sorted(set(labels) - set(index))
    if unknown:
        raise InputError(f"{source} has label(s) {unknown[:5]} that the training data lacks (labels: {label_names}).")
    return np.array([index[label] for label in labels], np.int32)


def check_output_dir(output_dir):
    """Refuses an output_dir that already holds files, before any training: a second run would mix its
    best.keras, results and serving models with the first one's; a path that is a file or node is refused too."""
    check_output_directory(output_dir)
    if tf.io.gfile.isdir(output_dir) and tf.io.gfile.listdir(output_dir):
        raise InputError(f"--output_dir {output_dir} is not empty: pass a new directory (or remove this one) "
                         f"so two runs never mix their models.")


def finetune_classifier(recipe, encoder, tokenizer, train, dev, *, vocab_file=None, verbose=1):
    """Fine-tunes `BertClassifier(encoder)` on `train` (`LabelledTexts`) with the settings of `recipe` (a
    `FinetuningRecipe`: max_seq_length, num_train_epochs, the batch sizes, learning_rate, warmup_proportion,
    output_dir, version), evaluates on `dev` after every epoch, restores the best epoch and writes to the recipe's
    `output_dir`: `best.keras`, `labels.txt`, `dev_results.json`, `classifier/<version>` (ids -> probabilities)
    and, given the model's `vocab_file`, `preprocessing/<version>` (text -> ids, cased as `tokenizer`). The
    recipe's model and data fields are not read here: `encoder`, `tokenizer`, `train` and `dev` are what they
    load. `output_dir` must be new or empty; a loss that becomes NaN or infinite raises `NonFiniteLossError` and
    nothing is exported. `verbose` is Keras `fit`'s.

    Example:
    >>> recipe = FinetuningRecipe(output_dir="finetuned", num_train_epochs=2)  # doctest: +SKIP
    >>> result = finetune_classifier(recipe, bert_tf.load_encoder("model_dir"), FullTokenizer("vocab.txt"), train,
    ...                              dev, vocab_file="vocab.txt")  # doctest: +SKIP
    >>> result.best_accuracy  # doctest: +SKIP
    0.91
    """
    from bert_tf.serving import CLASSIFIER, PREPROCESSING, export_classifier, export_preprocessing, version_dir

    max_seq_length, output_dir, train_batch_size = recipe.max_seq_length, recipe.output_dir, recipe.train_batch_size
    num_train_epochs = int(recipe.num_train_epochs)
    if not output_dir:
        raise InputError("The recipe has no output_dir: set it to a new directory for the models and results.")
    if max_seq_length > encoder.config.max_position_embeddings:
        raise InputError(f"max_seq_length={max_seq_length} exceeds the model's max_position_embeddings="
                         f"{encoder.config.max_position_embeddings}.")
    if (train.texts_b is None) != (dev.texts_b is None):
        raise InputError("Train and dev data must both have a second text segment, or neither.")
    label_names = sorted(set(train.labels))
    if len(label_names) < 2:
        raise InputError(f"The training data has only the label(s) {label_names}: a classifier needs two or more.")
    check_output_dir(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    train_y = label_ids(train.labels, label_names, "the training data")
    dev_y = label_ids(dev.labels, label_names, "the dev data")
    train_x = encode_texts(tokenizer, train.texts_a, train.texts_b, max_seq_length)
    dev_x = encode_texts(tokenizer, dev.texts_a, dev.texts_b, max_seq_length)
    majority_label = collections.Counter(train_y.tolist()).most_common(1)[0][0]
    majority = float(np.mean(dev_y == majority_label))
    print(f"{len(train)} training and {len(dev)} dev examples, labels {label_names}; majority baseline "
          f"(always {label_names[majority_label]!r}): dev accuracy {majority:.4f}", flush=True)

    num_train_steps = math.ceil(len(train) / train_batch_size) * num_train_epochs
    model = BertClassifier(encoder, num_classes=len(label_names))
    model.compile(optimizer=create_finetuning_optimizer(recipe.learning_rate, num_train_steps,
                                                        int(recipe.warmup_proportion * num_train_steps)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    evaluation = DevEvaluation(dev_x, dev_y, len(label_names), recipe.eval_batch_size,
                               os.path.join(output_dir, BEST_MODEL), after_progress_bar=verbose == 1)
    model.fit(train_x, train_y, batch_size=train_batch_size, epochs=num_train_epochs, shuffle=True,
              callbacks=[FiniteLossGuard(), evaluation], verbose=verbose)
    if evaluation.best_weights is None:
        raise NonFiniteLossError("No epoch gave finite dev logits: nothing was exported. Lower --learning_rate and "
                                 "check the inputs.")
    model.set_weights(evaluation.best_weights)
    print(f"best: epoch {evaluation.best_epoch}, dev accuracy: {evaluation.best_accuracy:.4f}", flush=True)

    write_text_atomically(os.path.join(output_dir, LABELS_FILE), "".join(f"{name}\n" for name in label_names))
    paths = {"best_model": os.path.join(output_dir, BEST_MODEL),
             CLASSIFIER: export_classifier(model, version_dir(output_dir, CLASSIFIER, recipe.version), label_names)}
    if vocab_file:
        paths[PREPROCESSING] = export_preprocessing(
            version_dir(output_dir, PREPROCESSING, recipe.version), vocab_file, tokenizer.settings, max_seq_length,
            encoder.config.max_position_embeddings)
    result = FinetuningResult(evaluation.history, evaluation.best_epoch, evaluation.best_accuracy, majority, paths)
    write_text_atomically(os.path.join(output_dir, RESULTS_FILE), json.dumps(dataclasses.asdict(result), indent=2))
    logging.info("Wrote %s", paths)
    return result

"""bert-export: SavedModels for TF Serving, TF Hub-style reuse and fine-tuning, from a checkpoint directory.

  bert-export --model_dir=runs/demo --output_dir=exported
      -> exported/encoder/1        TF Hub BERT API, core TensorFlow ops only (stock TF Serving loads it)
         exported/encoder_mlm/1    the same plus the `mlm` signature (masked_lm_positions -> mlm_logits)
         exported/preprocessing/1  text -> ids on tensorflow-text (`tokenize`, `bert_pack_inputs`, signatures)
  bert-export --keras_model=finetuned/best.keras --output_dir=exported
      -> exported/classifier/1        a fine-tuned BertClassifier: ids -> probabilities, label_ids
         exported/token_classifier/1  (a BertTokenClassifier) ids -> per-token probabilities, label_ids
         exported/span_qa/1           (a BertSpanQA) ids -> start_logits, end_logits

--model_dir is a directory written by bert-convert or bert-pretrain; the SavedModels normalize text as its vocab's
settings file says (vocab.settings.json), unless --do_lower_case / --strip_accents are given. A wrong flag or input
ends it with exit status 2 and one line naming the cause (see `bert_tf.cli.app`).
"""

import dataclasses
import os
from typing import Optional

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.config_schema import Section, field_option
from bert_tf.errors import InputError, InputFileNotFoundError
from bert_tf.text.tokenizer_settings import DO_LOWER_CASE_HELP, STRIP_ACCENTS_HELP


@dataclasses.dataclass(frozen=True)
class ExportConfig(Section):
    """What `bert-export` exports (a checkpoint directory or a fine-tuned .keras model) and where to.

    Example:
    >>> ExportConfig(model_dir="runs/demo", output_dir="exported").max_seq_length
    128
    """

    model_dir: Optional[str] = field_option(None, "Checkpoint directory from bert-convert or bert-pretrain "
                                                  "(bert_config.json, vocab.txt, ckpt-N).")
    keras_model: Optional[str] = field_option(None, "Instead of --model_dir: a fine-tuned BertClassifier, "
                                                    "BertTokenClassifier or BertSpanQA saved as .keras (e.g. "
                                                    "bert-finetune's best.keras), exported as classifier/, "
                                                    "token_classifier/ or span_qa/<version>.")
    labels_file: Optional[str] = field_option(None, "With --keras_model of a (token) classifier: label names, one per "
                                                    "line (default: labels.txt next to the .keras file).")
    output_dir: Optional[str] = field_option(None, "Where the SavedModels go, each as <output_dir>/<name>/<version>.")
    vocab_file: Optional[str] = field_option(None, "The model's vocab (default: vocab.txt in --model_dir).")
    do_lower_case: Optional[bool] = field_option(None, DO_LOWER_CASE_HELP)
    strip_accents: Optional[bool] = field_option(None, STRIP_ACCENTS_HELP)
    max_seq_length: int = field_option(128, "Length the preprocessing model's signatures pack text to.")
    version: int = field_option(1, "Version folder number (TF Serving serves the highest).")


def read_labels(labels_file, num_classes):
    """The label names of a classifier with `num_classes` classes, one per line of `labels_file`."""
    if not os.path.exists(labels_file):
        raise InputFileNotFoundError(f"No labels file {labels_file}: pass --labels_file (label names, one per line).")
    with open(labels_file, encoding="utf-8") as f:
        labels = [line.rstrip("\n") for line in f if line.strip()]
    if len(labels) != num_classes:
        raise InputError(f"{labels_file} lists {len(labels)} labels but the model has {num_classes} classes: "
                         f"pass --labels_file with one name per class.")
    return labels


def export_keras_model(path, labels_file, output_dir, version):
    """A fine-tuned task model saved as .keras -> its serving model under `<output_dir>/<name>/<version>`."""
    import keras

    from bert_tf.finetuning import BertClassifier, BertSpanQA, BertTokenClassifier
    from bert_tf.serving import CLASSIFIER, SPAN_QA, TOKEN_CLASSIFIER, export_classifier, export_span_qa, version_dir

    if not os.path.exists(path):
        raise InputFileNotFoundError(f"--keras_model {path} does not exist: pass the .keras file bert-finetune wrote.")
    model = keras.models.load_model(path)
    if isinstance(model, BertSpanQA):
        return {SPAN_QA: export_span_qa(model, version_dir(output_dir, SPAN_QA, version))}
    if isinstance(model, BertClassifier):
        name = CLASSIFIER
    elif isinstance(model, BertTokenClassifier):
        name = TOKEN_CLASSIFIER
    else:
        raise InputError(f"{path} holds a {type(model).__name__}: pass a BertClassifier, BertTokenClassifier or "
                         f"BertSpanQA saved as .keras.")
    labels = read_labels(labels_file or os.path.join(os.path.dirname(path), "labels.txt"), model.num_classes)
    return {name: export_classifier(model, version_dir(output_dir, name, version), labels)}


def main(config):
    from bert_tf.model_dir import vocab_path
    from bert_tf.serving import export_model_dir
    from bert_tf.text.tokenizer_settings import TokenizerSettings

    if bool(config.model_dir) == bool(config.keras_model):
        raise InputError("Pass exactly one of --model_dir (a checkpoint directory) and --keras_model "
                         "(a fine-tuned .keras model).")
    if config.keras_model:
        paths = export_keras_model(config.keras_model, config.labels_file, config.output_dir, config.version)
    else:
        settings = TokenizerSettings.for_vocab(config.vocab_file or vocab_path(config.model_dir),
                                               config.do_lower_case, config.strip_accents)
        paths = export_model_dir(config.model_dir, config.output_dir, config.vocab_file, settings,
                                 config.max_seq_length, config.version)
    for name, path in paths.items():
        print(f"{name}: {path}", flush=True)


COMMAND = Command(ExportConfig, main, required=("output_dir",))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

"""A fine-tuning run as data: `FinetuningRecipe`, a section of the shared config schema (`bert_tf.config_schema`).

`bert-finetune` reads one from `--config=FILE` (YAML or JSON, `load_finetuning_recipe`), then applies the flags given
on its command line and `--set FIELD=VALUE` (both through the schema's `override`); each field is also a flag of the
same name, generated from the field (its type, default and help: `bert_tf.cli.config_flags`), so a new option is one
field here, with its rule, and the code that uses it.
"""

import dataclasses
from typing import Optional

from bert_tf.config_loading import load_config
from bert_tf.config_schema import ConfigError, Section, field_option

# `bert-finetune --help`'s groups.
EXAMPLES = "examples (files or a TFDS dataset)"
MODEL = "the pre-trained model"
TRAINING = "training"
OUTPUT = "output"


@dataclasses.dataclass(frozen=True)
class FinetuningRecipe(Section):
    """Everything `bert-finetune` needs: the model to start from, the labelled data, the training settings and
    where the results go. Defaults are the original run_classifier.py's.

    Example:
    >>> recipe = FinetuningRecipe.from_dict({"init_checkpoint": "runs/demo", "train_file": "train.tsv",
    ...                                      "dev_file": "dev.tsv", "learning_rate": 2e-5}, "glue.yaml")
    >>> recipe.learning_rate, recipe.train_batch_size
    (2e-05, 32)
    >>> recipe.override({"num_train_epochs": "4"}, "--set").num_train_epochs
    4
    >>> FinetuningRecipe.from_dict({"learning_rate": 5e5}, "glue.yaml")
    Traceback (most recent call last):
    bert_tf.config_schema.ConfigError: glue.yaml: learning_rate=500000.0 must be a number in (0, 1]: fine-tuning uses \
e.g. 2e-5 to 5e-5 (note the minus sign in the exponent).
    """

    init_checkpoint: Optional[str] = field_option(None, "Checkpoint directory from bert-convert or bert-pretrain.",
                                                  group=MODEL)
    init_saved_model: Optional[str] = field_option(None, "Instead of --init_checkpoint: an encoder SavedModel from "
                                                         "bert-export (its encoder/<version> folder).", group=MODEL)
    vocab_file: Optional[str] = field_option(None, "The model's vocab (default: the one in the checkpoint dir / "
                                                   "SavedModel).", group=MODEL)
    do_lower_case: Optional[bool] = field_option(None, "Lower-case the text (an uncased model); without "
                                                       "--strip_accents it also strips accents, as the original flag "
                                                       "does. Default: the model's own settings (the vocab's settings "
                                                       "file, or the SavedModel's variables), else true.", group=MODEL)
    strip_accents: Optional[bool] = field_option(None, "Strip accents (ü -> u, が -> か). Default: the model's own "
                                                       "settings, else as --do_lower_case.", group=MODEL)
    train_file: Optional[str] = field_option(None, "Training examples: a TSV (.tsv/.txt) or CSV (.csv) file with a "
                                                   "header row.", group=EXAMPLES)
    dev_file: Optional[str] = field_option(None, "Dev examples, same format; evaluated after every epoch.",
                                           group=EXAMPLES)
    text_column: str = field_option("text", "Column (or TFDS feature) of the text, or of the first segment.",
                                    group=EXAMPLES)
    text_b_column: Optional[str] = field_option(None, "Column of the second segment, for sentence-pair tasks.",
                                                group=EXAMPLES)
    label_column: str = field_option("label", "Column (or TFDS feature) of the label.", group=EXAMPLES)
    tfds_name: Optional[str] = field_option(None, "Instead of files: a TFDS dataset prepared in --data_dir.",
                                            group=EXAMPLES)
    data_dir: Optional[str] = field_option(None, "The TFDS data_dir that holds --tfds_name (nothing downloads).",
                                           group=EXAMPLES)
    train_split: str = field_option("train", "TFDS split to train on.", group=EXAMPLES)
    dev_split: str = field_option("validation", "TFDS split to evaluate on.", group=EXAMPLES)
    max_seq_length: int = field_option(128, "Tokens per example, [CLS] and [SEP]s included; longer ones are cut.",
                                       group=MODEL)
    num_train_epochs: float = field_option(3.0, "Epochs to train (a whole number: dev accuracy is reported per epoch).",
                                           group=TRAINING)
    train_batch_size: int = field_option(32, "Examples per training step.", group=TRAINING)
    eval_batch_size: int = field_option(64, "Examples per dev prediction step.", group=TRAINING)
    learning_rate: float = field_option(5e-5, "Peak learning rate of the original AdamWeightDecay (linear warmup, then "
                                              "linear decay to 0).", group=TRAINING)
    warmup_proportion: float = field_option(0.1, "Fraction of the steps spent warming the learning rate up from 0.",
                                            group=TRAINING)
    output_dir: Optional[str] = field_option(None, "Where the best model, its results and the serving models go "
                                                   "(required).", group=OUTPUT)
    version: int = field_option(1, "Version folder number of the exported serving models.", group=OUTPUT)
    seed: int = field_option(12345, "Seed of the classifier head, dropout and the shuffling.", group=TRAINING)

    def _rules(self):
        whole = "must be a positive whole number"
        return (("num_train_epochs", self.num_train_epochs >= 1 and self.num_train_epochs == int(self.num_train_epochs),
                 "must be a whole number >= 1 (dev accuracy is reported after each epoch)"),
                ("learning_rate", 0 < self.learning_rate <= 1,
                 "must be a number in (0, 1]: fine-tuning uses e.g. 2e-5 to 5e-5 (note the minus sign in the "
                 "exponent)"),
                ("warmup_proportion", 0 <= self.warmup_proportion <= 1, "must lie in [0, 1] (the original: 0.1)"),
                ("train_batch_size", self.train_batch_size >= 1, whole),
                ("eval_batch_size", self.eval_batch_size >= 1, whole),
                ("version", self.version >= 1, whole),
                ("max_seq_length", self.max_seq_length >= 3,
                 "leaves no room for text after [CLS] and [SEP]: pass e.g. 128"),
                ("seed", self.seed >= 0, "must be a non-negative integer"))

    def check_ready(self):
        """Checks what a run needs beyond valid fields: one model to start from, one source of data, an output
        directory."""
        if bool(self.init_checkpoint) == bool(self.init_saved_model):
            raise ConfigError("Pass exactly one of --init_checkpoint (a checkpoint directory) and --init_saved_model "
                              "(an encoder SavedModel from bert-export).")
        if self.tfds_name:
            if self.train_file or self.dev_file:
                raise ConfigError("Pass either --tfds_name or --train_file/--dev_file, not both.")
            if not self.data_dir:
                raise ConfigError("--tfds_name needs --data_dir, the directory the dataset was prepared in.")
        elif not (self.train_file and self.dev_file):
            raise ConfigError("Pass --train_file and --dev_file (TSV/CSV with a header row), or --tfds_name.")
        if not self.output_dir:
            raise ConfigError("No output directory: pass --output_dir=DIR or set output_dir in the --config file.")


def load_finetuning_recipe(path):
    """A `FinetuningRecipe` from a YAML or JSON file; errors name the file's base name."""
    return load_config(FinetuningRecipe, path, kind="fine-tuning recipe")

"""bert-finetune: fine-tune a classifier with Keras fit, report dev accuracy every epoch, export it for serving.

  bert-finetune --init_checkpoint=runs/demo --train_file=train.tsv --dev_file=dev.tsv \\
      --text_column=sentence --label_column=label --output_dir=finetuned
  bert-finetune --init_saved_model=exported/encoder/1 --tfds_name=glue/mrpc --data_dir=/data/tfds \\
      --text_column=sentence1 --text_b_column=sentence2 --label_column=label --output_dir=finetuned

Prints `dev accuracy: 0.xxxx` (and `dev f1` for two classes) after every epoch, keeps the best epoch, and writes
to --output_dir: best.keras, labels.txt, dev_results.json, classifier/<version> (ids -> probabilities, core ops)
and preprocessing/<version> (text -> ids, tensorflow-text). A wrong flag or input ends it with exit status 2
and one line naming the cause (see `bert_tf.cli.app`).

Every setting is a field of `FinetuningRecipe` (bert_tf/finetuning/recipe.py): a flag of the same name, a key of a
YAML file given as `--config=FILE`, or `--set FIELD=VALUE`; flags on the command line override the file.

  bert-finetune --config=mrpc.yaml --set learning_rate=2e-5 --output_dir=finetuned
"""

import sys

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.errors import InputError, InputFileNotFoundError
from bert_tf.finetuning.recipe import FinetuningRecipe, load_finetuning_recipe


def load_data(recipe):
    from bert_tf.finetuning.examples import read_table, read_tfds

    columns = dict(text_column=recipe.text_column, label_column=recipe.label_column,
                   text_b_column=recipe.text_b_column)
    if recipe.tfds_name:
        return (read_tfds(recipe.tfds_name, recipe.data_dir, recipe.train_split, **columns),
                read_tfds(recipe.tfds_name, recipe.data_dir, recipe.dev_split, **columns))
    return read_table(recipe.train_file, **columns), read_table(recipe.dev_file, **columns)


def load_encoder(recipe):
    """The encoder, its vocab and tokenizer settings, from the recipe's init_checkpoint or init_saved_model: the
    settings the vocab (--vocab_file's, the checkpoint directory's) or the SavedModel carries, under the recipe's
    flags; a flag that contradicts them is refused."""
    from bert_tf.model_dir import load_encoder as load_checkpoint_encoder
    from bert_tf.model_dir import vocab_path
    from bert_tf.serving import load_encoder_from_saved_model
    from bert_tf.serving.settings_variables import saved_settings
    from bert_tf.text.tokenizer_settings import TokenizerSettings, settings_path

    if recipe.init_saved_model:
        encoder, vocab_file, _ = load_encoder_from_saved_model(recipe.init_saved_model)
        saved = saved_settings(recipe.init_saved_model)
        where = f"the do_lower_case and strip_accents variables of {recipe.init_saved_model}"
    else:
        encoder = load_checkpoint_encoder(recipe.init_checkpoint)
        vocab_file = vocab_path(recipe.init_checkpoint)
        saved, where = vocab_file and TokenizerSettings.read(vocab_file), vocab_file and settings_path(vocab_file)
    if recipe.vocab_file and TokenizerSettings.read(recipe.vocab_file):
        saved, where = TokenizerSettings.read(recipe.vocab_file), settings_path(recipe.vocab_file)
    vocab_file = recipe.vocab_file or vocab_file
    if vocab_file is None:
        raise InputFileNotFoundError(f"{recipe.init_checkpoint} holds no vocab.txt: pass --vocab_file.")
    return encoder, vocab_file, TokenizerSettings.resolve(saved, where, recipe.do_lower_case, recipe.strip_accents)


def check(recipe):
    """What needs no TensorFlow: one model to start from, one source of data, an output directory."""
    recipe.check_ready()


def main(recipe):
    import keras

    from bert_tf.finetuning.run_classifier import check_output_dir, finetune_classifier
    from bert_tf.text.tokenizer import FullTokenizer

    check_output_dir(recipe.output_dir)
    keras.utils.set_random_seed(recipe.seed)
    train, dev = load_data(recipe)
    encoder, vocab_file, settings = load_encoder(recipe)
    tokenizer = FullTokenizer(vocab_file, settings.do_lower_case, settings.strip_accents)
    if tokenizer.vocab_size != encoder.config.vocab_size:
        raise InputError(f"vocab_file {vocab_file} does not match the model's vocab_size="
                         f"{encoder.config.vocab_size}: pass the vocab the model was trained with.")
    finetune_classifier(recipe, encoder, tokenizer, train, dev, vocab_file=vocab_file,
                        verbose=fit_verbosity(sys.stdout))


def fit_verbosity(stream):
    """Keras `fit`'s `verbose` for output to `stream`: 1 (the progress bar) on a terminal; 2 (one line per epoch,
    without the bar's ANSI codes and carriage returns) in a log file or pipe.

    >>> import io
    >>> fit_verbosity(io.StringIO())
    2
    """
    return 1 if stream.isatty() else 2


COMMAND = Command(FinetuningRecipe, main, load=load_finetuning_recipe, check=check,
                  config_help="A fine-tuning recipe (YAML) with any of the fields below; flags given on the command "
                              "line override it.")


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

"""bert-finetune: fine-tune a classifier with Keras fit, report dev accuracy every epoch, export it for serving.

  bert-finetune --init_checkpoint=runs/demo --train_file=train.tsv --dev_file=dev.tsv \
      --text_column=sentence --label_column=label --output_dir=finetuned
  bert-finetune --init_saved_model=exported/encoder/1 --tfds_name=glue/mrpc --data_dir=/data/tfds \
      --text_column=sentence1 --text_b_column=sentence2 --label_column=label --output_dir=finetuned

Prints `dev accuracy: 0.xxxx` (and `dev f1` for two classes) after every epoch, keeps the best epoch, and writes
to --output_dir: best.keras, labels.txt, dev_results.json, classifier/<version> (ids -> probabilities, core ops)
and preprocessing/<version> (text -> ids, tensorflow-text). A wrong flag or input ends it with exit status 2
and one line naming the cause (see `bert_tf.cli.app`).
"""

from absl import flags, logging

from bert_tf.cli import app

FLAGS = flags.FLAGS

flags.DEFINE_string("init_checkpoint", None, "Checkpoint directory from bert-convert or bert-pretrain.")
flags.DEFINE_string("init_saved_model", None, "Instead of --init_checkpoint: an encoder SavedModel from bert-export "
                    "(its encoder/<version> folder).")
flags.DEFINE_string("vocab_file", None, "The model's vocab (default: the one in the checkpoint dir / SavedModel).")
flags.DEFINE_bool("do_lower_case", True, "Whether the model is uncased (with --init_saved_model, the SavedModel's "
                  "own setting is used).")
flags.DEFINE_string("train_file", None, "Training examples: a TSV (.tsv/.txt) or CSV (.csv) file with a header row.")
flags.DEFINE_string("dev_file", None, "Dev examples, same format; evaluated after every epoch.")
flags.DEFINE_string("text_column", "text", "Column (or TFDS feature) of the text, or of the first segment.")
flags.DEFINE_string("text_b_column", None, "Column of the second segment, for sentence-pair tasks.")
flags.DEFINE_string("label_column", "label", "Column (or TFDS feature) of the label.")
flags.DEFINE_string("tfds_name", None, "Instead of files: a TFDS dataset prepared in --data_dir.")
flags.DEFINE_string("data_dir", None, "The TFDS data_dir that holds --tfds_name (nothing downloads).")
flags.DEFINE_string("train_split", "train", "TFDS split to train on.")
flags.DEFINE_string("dev_split", "validation", "TFDS split to evaluate on.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example, [CLS] and [SEP]s included; longer ones are cut.")
flags.DEFINE_float("num_train_epochs", 3.0, "Epochs to train (a whole number: dev accuracy is reported per epoch).")
flags.DEFINE_integer("train_batch_size", 32, "Examples per training step.")
flags.DEFINE_integer("eval_batch_size", 64, "Examples per dev prediction step.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate of the original AdamWeightDecay (linear warmup, then "
                   "linear decay to 0).")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps spent warming the learning rate up from 0.")
flags.DEFINE_string("output_dir", None, "Where the best model, its results and the serving models go.")
flags.DEFINE_integer("version", 1, "Version folder number of the exported serving models.")
flags.DEFINE_integer("seed", 12345, "Seed of the classifier head, dropout and the shuffling.")


def load_data():
    from bert_tf.finetuning.examples import read_table, read_tfds

    columns = dict(text_column=FLAGS.text_column, label_column=FLAGS.label_column, text_b_column=FLAGS.text_b_column)
    if FLAGS.tfds_name:
        if FLAGS.train_file or FLAGS.dev_file:
            raise ValueError("Pass either --tfds_name or --train_file/--dev_file, not both.")
        if not FLAGS.data_dir:
            raise ValueError("--tfds_name needs --data_dir, the directory the dataset was prepared in.")
        return (read_tfds(FLAGS.tfds_name, FLAGS.data_dir, FLAGS.train_split, **columns),
                read_tfds(FLAGS.tfds_name, FLAGS.data_dir, FLAGS.dev_split, **columns))
    if not (FLAGS.train_file and FLAGS.dev_file):
        raise ValueError("Pass --train_file and --dev_file (TSV/CSV with a header row), or --tfds_name.")
    return read_table(FLAGS.train_file, **columns), read_table(FLAGS.dev_file, **columns)


def load_encoder():
    """The encoder, its vocab and casing, from --init_checkpoint or --init_saved_model."""
    from bert_tf.model_dir import load_encoder as load_checkpoint_encoder
    from bert_tf.model_dir import vocab_path
    from bert_tf.serving import load_encoder_from_saved_model

    if bool(FLAGS.init_checkpoint) == bool(FLAGS.init_saved_model):
        raise ValueError("Pass exactly one of --init_checkpoint (a checkpoint directory) and --init_saved_model "
                         "(an encoder SavedModel from bert-export).")
    if FLAGS.init_saved_model:
        encoder, vocab_file, do_lower_case = load_encoder_from_saved_model(FLAGS.init_saved_model)
        if FLAGS["do_lower_case"].present and FLAGS.do_lower_case != do_lower_case:
            logging.warning("--do_lower_case=%s differs from the SavedModel's do_lower_case=%s; using the flag.",
                            FLAGS.do_lower_case, do_lower_case)
            do_lower_case = FLAGS.do_lower_case
    else:
        encoder = load_checkpoint_encoder(FLAGS.init_checkpoint)
        vocab_file, do_lower_case = vocab_path(FLAGS.init_checkpoint), FLAGS.do_lower_case
    vocab_file = FLAGS.vocab_file or vocab_file
    if vocab_file is None:
        raise FileNotFoundError(f"{FLAGS.init_checkpoint} holds no vocab.txt: pass --vocab_file.")
    return encoder, vocab_file, do_lower_case


def check_flags():
    """Refuses numeric flags that cannot be meant (NaN, 0, a typo like 5e5 for 5e-5) and an output_dir that already
    holds a run, before anything is loaded or trained."""
    import math

    from bert_tf.finetuning.run_classifier import check_output_dir

    epochs = FLAGS.num_train_epochs
    if not (math.isfinite(epochs) and epochs >= 1 and epochs == int(epochs)):
        raise app.InputError(f"--num_train_epochs={epochs} must be a whole number >= 1 (dev accuracy is reported "
                             f"after each epoch).")
    rate = FLAGS.learning_rate
    if not (math.isfinite(rate) and 0 < rate <= 1):
        raise app.InputError(f"--learning_rate={rate} must be a number in (0, 1]: fine-tuning uses e.g. 2e-5 to 5e-5 "
                             f"(note the minus sign in the exponent).")
    if not (math.isfinite(FLAGS.warmup_proportion) and 0 <= FLAGS.warmup_proportion <= 1):
        raise app.InputError(f"--warmup_proportion={FLAGS.warmup_proportion} must lie in [0, 1] (the original: 0.1).")
    for name in ("train_batch_size", "eval_batch_size", "version"):
        if FLAGS[name].value < 1:
            raise app.InputError(f"--{name}={FLAGS[name].value} must be a positive whole number.")
    if FLAGS.max_seq_length < 3:
        raise app.InputError(f"--max_seq_length={FLAGS.max_seq_length} leaves no room for text after [CLS] and [SEP]: "
                             f"pass e.g. 128.")
    check_output_dir(FLAGS.output_dir)


def main(argv):
    del argv
    import keras

    from bert_tf.finetuning.run_classifier import finetune_classifier
    from bert_tf.text.tokenizer import FullTokenizer

    check_flags()
    keras.utils.set_random_seed(FLAGS.seed)
    train, dev = load_data()
    encoder, vocab_file, do_lower_case = load_encoder()
    tokenizer = FullTokenizer(vocab_file, do_lower_case)
    if tokenizer.vocab_size != encoder.config.vocab_size:
        raise app.InputError(f"vocab_file {vocab_file} does not match the model's vocab_size="
                             f"{encoder.config.vocab_size}: pass the vocab the model was trained with.")
    finetune_classifier(
        encoder, tokenizer, train, dev, FLAGS.output_dir,
        max_seq_length=FLAGS.max_seq_length, num_train_epochs=int(FLAGS.num_train_epochs),
        train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
        learning_rate=FLAGS.learning_rate, warmup_proportion=FLAGS.warmup_proportion, vocab_file=vocab_file,
        do_lower_case=do_lower_case, version=FLAGS.version)


def run():
    app.run(main, required_flags=["output_dir"])


if __name__ == "__main__":
    run()

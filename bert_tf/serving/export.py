"""Writing the SavedModels of `bert-export` and `bert-finetune`, each in a numbered version folder
(`<output_dir>/<name>/<version>/`) so TF Serving can serve `<output_dir>/<name>` as it is."""

import os
import tempfile

import tensorflow as tf
from absl import logging

from bert_tf.atomic_output import check_output_directory, directory_written_atomically
from bert_tf.errors import InputError, InputFileNotFoundError, OutputExistsError
from bert_tf.model_dir import load_pretrainer, read_config, vocab_path
from bert_tf.serving.classifier_module import ClassifierModule
from bert_tf.serving.encoder_module import EncoderModule
from bert_tf.serving.input_checks import check_seq_length
from bert_tf.serving.span_qa_module import SpanQAModule
from bert_tf.text.normalization import loses_mark
from bert_tf.text.tokenizer_settings import TokenizerSettings
from bert_tf.text.vocabulary import SPECIAL_TOKENS, Vocabulary, read_vocab_file

ENCODER, ENCODER_MLM, PREPROCESSING = "encoder", "encoder_mlm", "preprocessing"
CLASSIFIER, TOKEN_CLASSIFIER, SPAN_QA = "classifier", "token_classifier", "span_qa"


def version_dir(output_dir, name, version=1):
    """`<output_dir>/<name>/<version>`: the layout TF Serving's `base_path` expects."""
    return os.path.join(output_dir, name, str(version))


def check_free(export_dir):
    """Refuses to overwrite an exported version (TF Serving may be serving it), naming the next free `--version`,
    and a path inside a file or node."""
    check_output_directory(export_dir)
    if tf.io.gfile.exists(os.path.join(export_dir, "saved_model.pb")):
        parent = os.path.dirname(export_dir.rstrip("/"))
        taken = [int(name.strip("/")) for name in tf.io.gfile.listdir(parent) if name.strip("/").isdigit()]
        raise OutputExistsError(f"{export_dir} already holds a SavedModel: TF Serving treats a version as immutable, "
                                f"so export to a new version number (--version={max(taken, default=1) + 1}) or "
                                f"remove the folder first.")


def _save(module, export_dir):
    """Saves `module` under a temporary name beside `export_dir` and renames it when complete, so an interrupted
    export leaves no half-written version (TF Serving would try to load it) and a rerun is not refused."""
    check_free(export_dir)
    # A folder without a SavedModel (e.g. made by hand) is replaced by the complete one.
    with directory_written_atomically(export_dir) as partial:
        tf.saved_model.save(module, partial, signatures=module.signature_functions())
    logging.info("Wrote %s", export_dir)
    return export_dir


def export_encoder(pretrainer, export_dir, vocab_file, settings=None, with_mlm=False):
    """Writes the encoder SavedModel (see `EncoderModule`) with the masked-LM head as its `.mlm` subobject;
    `with_mlm` adds the `mlm` signature. `settings`: the vocab's `TokenizerSettings` (default: its settings file's,
    else the original's).

    Example:
    >>> pretrainer = bert_tf.load_pretrainer("model_dir")  # doctest: +SKIP
    >>> export_encoder(pretrainer, "exported/encoder/1", "model_dir/vocab.txt")  # doctest: +SKIP
    """
    with tempfile.TemporaryDirectory() as scratch:
        # Assets are copied from files at save time, so the config gets a file of its own.
        config_file = os.path.join(scratch, "bert_config.json")
        pretrainer.config.to_json_file(config_file)
        settings = settings or TokenizerSettings.for_vocab(vocab_file)
        module = EncoderModule(pretrainer.encoder, vocab_file, config_file, settings, pretrainer.masked_lm,
                               mlm_signature=with_mlm)
        return _save(module, export_dir)


def export_preprocessing(export_dir, vocab_file, settings=None, seq_length=128, max_seq_length=512):
    """Writes the tensorflow-text preprocessing SavedModel (see `PreprocessingModule`); `settings`: the vocab's
    `TokenizerSettings` (default: its settings file's, else the original's).

    Example:
    >>> export_preprocessing("exported/preprocessing/1", "vocab.txt", seq_length=128)  # doctest: +SKIP
    """
    # Imported here: tensorflow-text is only needed by this model.
    from bert_tf.serving.preprocessing_module import PreprocessingModule

    settings = settings or TokenizerSettings.for_vocab(vocab_file)
    return _save(PreprocessingModule(vocab_file, settings, seq_length, max_seq_length), export_dir)


def export_classifier(model, export_dir, labels):
    """Writes the serving model of a fine-tuned `BertClassifier` (ids -> `probabilities` [batch, num_labels],
    `label_ids` [batch]) or `BertTokenClassifier` (the same per token: [batch, seq, num_labels], [batch, seq]),
    with the label names as the asset `labels.txt` (see `ClassifierModule`).

    Example:
    >>> export_classifier(classifier, "finetuned/classifier/1", labels=["negative", "positive"])  # doctest: +SKIP
    >>> export_classifier(tagger, "finetuned/token_classifier/1", labels=["O", "B-PER", "I-PER"])  # doctest: +SKIP
    """
    with tempfile.TemporaryDirectory() as scratch:
        labels_file = os.path.join(scratch, "labels.txt")
        with open(labels_file, "w", encoding="utf-8") as f:
            f.write("".join(f"{label}\n" for label in labels))
        return _save(ClassifierModule(model, labels_file), export_dir)


def export_span_qa(model, export_dir):
    """Writes the serving model of a fine-tuned `BertSpanQA`: ids -> `start_logits`, `end_logits` [batch, seq]
    (see `SpanQAModule`).

    Example:
    >>> export_span_qa(span_qa, "finetuned/span_qa/1")  # doctest: +SKIP
    """
    return _save(SpanQAModule(model), export_dir)


def check_settings(vocab_file, settings):
    """Warns when `settings` contradict the vocab's tokens: an uncased vocab has no upper-case tokens, and a vocab
    learned with accents stripped no token with a combining mark."""
    tokens = [token for token in read_vocab_file(vocab_file) if not token.startswith("[")]
    cased = any(token != token.lower() for token in tokens)
    if cased and settings.do_lower_case:
        logging.warning("%s holds upper-case tokens but do_lower_case=True: pass --nodo_lower_case for a cased "
                        "model, or inputs will never match those tokens.", vocab_file)
    if not cased and not settings.do_lower_case:
        logging.warning("%s holds no upper-case tokens but do_lower_case=False: upper-case input words will "
                        "become [UNK]; pass --do_lower_case for an uncased model.", vocab_file)
    marked = [token for token in tokens if any(map(loses_mark, token))]
    if marked and settings.strip_accents:
        logging.warning("%s holds tokens with accents or other marks (%s) but strip_accents=True: inputs will never "
                        "match those tokens; pass --nostrip_accents.", vocab_file, ", ".join(marked[:3]))


def export_model_dir(model_dir, output_dir, vocab_file=None, settings=None, seq_length=128, version=1):
    """All SavedModels of a checkpoint directory (from `bert-convert` or `bert-pretrain`): `encoder`,
    `encoder_mlm` and `preprocessing`, each under `<output_dir>/<name>/<version>`, with the vocab's tokenizer
    `settings` (default: its settings file's, else the original's). Returns {name: path}.

    Example:
    >>> export_model_dir("runs/demo", "exported")  # doctest: +SKIP
    {'encoder': 'exported/encoder/1', 'encoder_mlm': 'exported/encoder_mlm/1', 'preprocessing': ...}
    """
    if not tf.io.gfile.isdir(model_dir):
        missing = not tf.io.gfile.exists(model_dir)
        raise InputError(f"--model_dir {model_dir} {'does not exist' if missing else 'is not a directory'}: pass "
                         f"the directory bert-convert or bert-pretrain wrote (bert_config.json, vocab.txt, ckpt-N).")
    for name in (ENCODER, ENCODER_MLM, PREPROCESSING):
        check_free(version_dir(output_dir, name, version))
    vocab_file = vocab_file or vocab_path(model_dir)
    if vocab_file is None:
        raise InputFileNotFoundError(f"{model_dir} holds no vocab.txt: pass --vocab_file, the vocab the model was "
                                     f"trained with.")
    settings = settings or TokenizerSettings.for_vocab(vocab_file)
    check_settings(vocab_file, settings)
    config = read_config(model_dir)
    vocab = Vocabulary.from_file(vocab_file)
    if vocab.size != config.vocab_size:
        raise InputError(f"vocab_file {vocab_file} has {vocab.size} tokens but the model's "
                         f"vocab_size is {config.vocab_size}: pass the vocab the model was trained with.")
    vocab.require(SPECIAL_TOKENS, "the preprocessing model", pad_first=True)
    # Everything the three models need is checked before the first is written.
    check_seq_length(seq_length, config.max_position_embeddings)
    pretrainer = load_pretrainer(model_dir)
    paths = {
        ENCODER: export_encoder(pretrainer, version_dir(output_dir, ENCODER, version), vocab_file, settings),
        ENCODER_MLM: export_encoder(pretrainer, version_dir(output_dir, ENCODER_MLM, version), vocab_file,
                                    settings, with_mlm=True),
        PREPROCESSING: export_preprocessing(version_dir(output_dir, PREPROCESSING, version), vocab_file,
                                            settings, seq_length, config.max_position_embeddings),
    }
    return paths

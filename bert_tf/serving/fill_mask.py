"""Masked-word prediction from raw text through the SavedModels `bert-export` writes: for each `[MASK]` in the
text, the model's top-k words with their probabilities (`bert-fill-mask`, the demo's predictions).

The preprocessing model tokenizes "[MASK]" as ordinary text (`[ m ##as ##k ]`: the original BasicTokenizer splits
punctuation and knows no special tokens), so the text is cut at each "[MASK]", the pieces are tokenized apart and
the [MASK] id put between them; the preprocessing model still does the tokenizing and the packing.
"""

import os
import re

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the preprocessing model's ops)

from bert_tf.config import BertConfig
from bert_tf.errors import InputError, InputFileNotFoundError
from bert_tf.serving.export import ENCODER_MLM, PREPROCESSING
from bert_tf.text.vocabulary import read_vocab_file

MASK = "[MASK]"


def exported_version(saved_model_dir, name):
    """`<saved_model_dir>/<name>/<highest version>` holding a saved_model.pb; an InputError naming what to pass
    when there is none.

    >>> exported_version("/nonexistent", "encoder_mlm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    bert_tf.errors.InputFileNotFoundError: --saved_model /nonexistent has no encoder_mlm/<version>/saved_model.pb: ...
    """
    folder = os.path.join(saved_model_dir, name)
    versions = sorted((int(v.rstrip("/")) for v in (tf.io.gfile.listdir(folder) if tf.io.gfile.isdir(folder) else [])
                       if v.rstrip("/").isdigit() and tf.io.gfile.exists(os.path.join(folder, v, "saved_model.pb"))))
    if not versions:
        raise InputFileNotFoundError(
            f"--saved_model {saved_model_dir} has no {name}/<version>/saved_model.pb: pass the --output_dir of "
            f"`bert-export --model_dir=...`, which writes {ENCODER_MLM}/1 and {PREPROCESSING}/1.")
    return os.path.join(folder, str(versions[-1]))


class MaskFiller:
    """The exported masked-LM encoder and preprocessing model, loaded once, filling `[MASK]`s in raw text.

    Args:
        saved_model_dir: the folder `bert-export --model_dir=...` wrote (`encoder_mlm/<v>`, `preprocessing/<v>`;
            the highest version of each is used).

    Example:
    >>> filler = MaskFiller("exported")  # doctest: +SKIP
    >>> filler("Please let your handmaid speak a word to my lord the [MASK].", top_k=3)  # doctest: +SKIP
    [[('king', 0.71), ('lord', 0.05), ('earth', 0.03)]]
    """

    def __init__(self, saved_model_dir):
        encoder_dir = exported_version(saved_model_dir, ENCODER_MLM)
        self.preprocessing = tf.saved_model.load(exported_version(saved_model_dir, PREPROCESSING))
        self.mlm = tf.saved_model.load(encoder_dir).signatures["mlm"]
        self.vocab = read_vocab_file(os.path.join(encoder_dir, "assets", "vocab.txt"))
        self.max_seq_length = BertConfig.from_json_file(
            os.path.join(encoder_dir, "assets", "bert_config.json")).max_position_embeddings
        special = {k: int(v) for k, v in self.preprocessing.tokenize.get_special_tokens_dict().items()}
        self.mask_id = special["mask_id"]

    def wordpieces(self, text):
        """The WordPiece tokens the preprocessing model makes of `text` (e.g. to compare with predictions)."""
        ids = self.preprocessing.tokenize(tf.constant([text])).flat_values.numpy()
        return [self.vocab[i] for i in ids]

    def ids(self, text):
        """The token ids of `text` with the [MASK] id at each "[MASK]" (no [CLS]/[SEP]); an InputError when it has
        none or is too long for the model."""
        pieces = re.split(re.escape(MASK), text)
        if len(pieces) < 2:
            raise InputError(f"The text has no {MASK}: write {MASK} where the word to predict goes, e.g. "
                             f"--text=\"The capital of France is {MASK}.\"")
        tokenized = self.preprocessing.tokenize(tf.constant(pieces))
        ids = []
        for i, piece in enumerate(tokenized.merge_dims(-2, -1).to_list()):
            ids += ([self.mask_id] if i else []) + piece
        if len(ids) + 2 > self.max_seq_length:
            raise InputError(f"The text is {len(ids) + 2} tokens with [CLS] and [SEP]; the model takes at most "
                             f"{self.max_seq_length}: shorten it around the {MASK}.")
        return ids

    def __call__(self, text, top_k=5):
        """For each "[MASK]" of `text`, in order: the `top_k` (token, probability) pairs, most probable first."""
        if top_k < 1:
            raise InputError(f"top_k={top_k} must be a positive integer.")
        ids = self.ids(text)
        inputs = self.preprocessing.bert_pack_inputs([tf.ragged.constant([ids], dtype=tf.int32)],
                                                     seq_length=len(ids) + 2)
        positions = np.flatnonzero(inputs["input_word_ids"].numpy()[0] == self.mask_id)
        logits = self.mlm(masked_lm_positions=tf.constant([positions], tf.int32),
                          **{k: tf.cast(v, tf.int32) for k, v in inputs.items()})["mlm_logits"].numpy()[0]
        predictions = []
        for row in logits.astype(np.float64):
            probabilities = np.exp(row - row.max())
            probabilities /= probabilities.sum()
            best = np.argsort(-probabilities, kind="stable")[:top_k]
            predictions.append([(self.vocab[i], float(probabilities[i])) for i in best])
        return predictions


def fill_mask(saved_model_dir, text, top_k=5):
    """`MaskFiller(saved_model_dir)(text, top_k)`: for each "[MASK]" of `text`, the top-k (token, probability).

    Example:
    >>> fill_mask("exported", "my lord the [MASK].", top_k=2)  # doctest: +SKIP
    [[('king', 0.71), ('lord', 0.05)]]
    """
    return MaskFiller(saved_model_dir)(text, top_k)

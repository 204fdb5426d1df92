"""WordPiece vocab files: loading them as the original does, checking the special tokens, learning new ones.

A vocab file holds one token per line; a token's id is its line number (from 0). The original `load_vocab`
strips each line and keeps every line, so this does too.
"""

import os

import tensorflow as tf

# The tokens every vocab of this package must hold. [PAD] must be id 0: the records pad with 0.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_vocab(vocab_file):
    """The tokens of a vocab file in id order (the original's `load_vocab`: each line stripped).

    Example:
    >>> tokens = load_vocab("vocab.txt")
    >>> tokens[:2], len(tokens)
    (['[PAD]', '[unused0]'], 30522)
    """
    vocab_file = os.fspath(vocab_file)
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"vocab_file {vocab_file!r} does not exist: pass a WordPiece vocab (one token per "
                                f"line), e.g. the model's vocab.txt or one learned with bert-vocab.")
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        lines = f.read().decode("utf-8", "ignore").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last token
    return [line.strip() for line in lines]


def check_vocab(tokens, source="the vocab"):
    """Raises a ValueError naming the problem if `tokens` lack a special token, repeat one, or [PAD] is not id 0."""
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise ValueError(f"{source} lacks the special token(s) {missing}: BERT needs all of {list(SPECIAL_TOKENS)}. "
                         f"Add them at the top of the file, or learn a vocab with bert-vocab (it always adds them).")
    if tokens[0] != "[PAD]":
        raise ValueError(f"{source} has {tokens[0]!r} at id 0, not [PAD]: records pad with id 0, so [PAD] must be "
                         f"the first line.")
    seen = set()
    for token in tokens:
        if token in seen:
            raise ValueError(f"{source} lists the token {token!r} twice: each token must appear on one line only.")
        seen.add(token)


def write_vocab(tokens, vocab_file):
    """Writes tokens one per line (ids are line numbers)."""
    with tf.io.gfile.GFile(os.fspath(vocab_file), "w") as f:
        f.write("".join(f"{t}\n" for t in tokens))


def learn_vocab(sentences, vocab_size, do_lower_case=True, batch_size=1024):
    """Learns a WordPiece vocab with tensorflow-text's `bert_vocab_from_dataset`; the special tokens come first.

    The text is normalized as `FullTokenizer` normalizes it (the original's clean-up, lower-casing and accent
    stripping) before learning, so the learned pieces are exactly the strings the tokenizer will look up.

    Args:
        sentences: an iterable of str.
        vocab_size: the target size (the learner returns approximately this many tokens).
        do_lower_case: lower-case and strip accents, as for an uncased model.

    Example:
    >>> tokens = learn_vocab(["The cat sat.", "The dog sat."] * 100, vocab_size=50)
    >>> tokens[:5]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    """
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as bert_vocab

    from bert_tf.text.normalization import normalize

    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size={vocab_size} leaves no room beside the {len(SPECIAL_TOKENS)} special tokens: "
                         f"use a few thousand (the original English vocab has 30522).")
    normalized = (normalize(s, do_lower_case) for s in sentences)
    dataset = tf.data.Dataset.from_generator(lambda: normalized, output_signature=tf.TensorSpec([], tf.string))
    learned = bert_vocab.bert_vocab_from_dataset(
        dataset.batch(batch_size), vocab_size=vocab_size, reserved_tokens=list(SPECIAL_TOKENS),
        # The text is already normalized; the learner only splits it on whitespace and punctuation.
        bert_tokenizer_params={"lower_case": False})
    tokens = list(SPECIAL_TOKENS) + [t for t in learned if t not in SPECIAL_TOKENS]
    check_vocab(tokens, "the learned vocab")
    return tokens

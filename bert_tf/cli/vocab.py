"""bert-vocab: learn a WordPiece vocab from text with tensorflow-text's bert_vocab_from_dataset, or extend a
released vocab with a domain's words (--extend).

The special tokens [PAD] (id 0), [UNK], [CLS], [SEP], [MASK] always come first. Examples:

  bert-vocab --input_file='corpus/*.txt' --vocab_size=30522 --output_file=vocab.txt
  bert-vocab --input_format=bible --vocab_size=8000 --output_file=bible_vocab.txt
  bert-vocab --extend=uncased_L-12_H-768_A-12/vocab.txt --input_file=domain_train.txt \\
      --heldout_file=domain_heldout.txt --output_file=domain_vocab.txt

With --extend, the input's frequent words that the base vocab splits into several pieces (score: frequency x
pieces saved) are written into the base's [unused*] rows, after the first --keep_unused of them; every other line
stays as it was and the size stays, unless --max_new_tokens (new tokens in all) asks for more than the free rows,
which appends the rest. Only whole words are added, never "##" continuations. See
bert_tf/text/vocab_extension.py for the rule.
"""

import sys

from absl import flags

from bert_tf.cli import app, flag_groups
from bert_tf.text import vocab_extension

FLAGS = flags.FLAGS

flag_groups.define_corpus_flags(["sentences", "text", "bible"])
flags.DEFINE_integer("vocab_size", 30522, "Target vocab size, special tokens included (the learner may return "
                                          "up to 5% fewer). Not used with --extend.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents first (an uncased vocab).")
flags.DEFINE_string("output_file", None, "Where to write the vocab, one token per line.")
flags.DEFINE_string("extend", None, "A released vocab (BASE_VOCAB) to extend with the input's words instead of "
                                    "learning one: they fill its [unused*] rows; every other line stays.")
flags.DEFINE_integer("keep_unused", vocab_extension.DEFAULT_KEEP_UNUSED,
                     "With --extend: the first this many [unused*] rows stay free for your own special tokens.")
flags.DEFINE_integer("max_new_tokens", None, "With --extend: at most this many new tokens IN ALL; beyond the free "
                                             "[unused*] rows they are appended (the vocab grows). Default: fill the "
                                             "free [unused*] rows only (the size stays).")
flags.DEFINE_integer("min_frequency", vocab_extension.DEFAULT_MIN_FREQUENCY,
                     "With --extend: a word occurring fewer times in the input is not added.")
flags.DEFINE_string("heldout_file", None, "With --extend: held-out domain text (the --input_format's format) to "
                                          "report tokens per word on, before and after.")

# --help's groups, by purpose (`bert_tf.cli.flag_parsing.command_help`).
HELP_GROUPS = {
    "learn a vocab": ["input_file", "input_format", "vocab_size", "do_lower_case", "output_file"],
    "extend a released vocab (--extend)": ["extend", "keep_unused", "max_new_tokens", "min_frequency",
                                           "heldout_file"],
}

_SHOWN_CHANGES = 30


def main(argv):
    del argv
    from bert_tf.text.corpus import CorpusCounts

    counts = CorpusCounts()
    documents = flag_groups.read_corpus(counts)
    sentences = (sentence for document in documents for sentence in document)
    if FLAGS.extend:
        extend(sentences, counts)
        return
    from bert_tf.text.vocab_learning import learn_vocab, too_few_tokens, write_vocab

    tokens = learn_vocab(sentences, FLAGS.vocab_size, do_lower_case=FLAGS.do_lower_case)
    write_vocab(tokens, FLAGS.output_file)
    print(f"wrote {len(tokens)} tokens to {FLAGS.output_file} (learned from {counts.lines} lines of "
          f"{counts.files} input(s); {counts.undecodable_lines} with undecodable bytes)", flush=True)
    warning = too_few_tokens(len(tokens), FLAGS.vocab_size)
    if warning:
        print(f"{app.program_name(main)}: warning: {warning}", file=sys.stderr, flush=True)


def extend(sentences, counts):
    """Extends --extend's vocab with the input's words, writes it and prints what changed."""
    from bert_tf.errors import InputError
    from bert_tf.text.corpus import CorpusCounts, read_documents
    from bert_tf.text.tokenizer import FullTokenizer
    from bert_tf.text.vocab_learning import write_vocab
    from bert_tf.text.vocabulary import Vocabulary

    base = Vocabulary.from_file(FLAGS.extend)
    words = vocab_extension.count_words(sentences, FLAGS.do_lower_case)
    if not words:
        raise InputError("The text to mine words from is empty: pass UTF-8 text files with --input_file.")
    extension = vocab_extension.extend_vocab(base, words, FLAGS.keep_unused, FLAGS.max_new_tokens,
                                             FLAGS.min_frequency)
    write_vocab(extension.tokens, FLAGS.output_file)
    appended = sum(token.appended for token in extension.added)
    print(f"wrote {len(extension.tokens)} tokens to {FLAGS.output_file}: {base.source} ({base.size} tokens) with "
          f"{len(extension.added)} words of the input ({counts.lines} lines, {len(words)} distinct words) added, "
          f"{len(extension.added) - appended} into [unused*] rows and {appended} appended; every other line kept. "
          f"{len(extension.free_unused)} [unused*] rows stay free.", flush=True)
    print("score = frequency x (pieces - 1); only whole words are added (no ## continuations)")
    print("row\ttoken\tfrequency\tscore\told pieces")
    for token in extension.added:
        print(f"{token.row}\t{token.token}\t{token.count}\t{token.score}\t{' '.join(token.old_pieces)}")

    old = FullTokenizer(base, do_lower_case=False)  # the counted words are normalized already
    new = FullTokenizer(list(extension.tokens), do_lower_case=False)
    emitted = {piece for pieces in vocab_extension.word_pieces(new, list(words)) for piece in pieces}
    silent = [token.token for token in extension.added if token.token not in emitted]
    print(f"added tokens the tokenizer emits on the input: {len(extension.added) - len(silent)} of "
          f"{len(extension.added)}" + (f" (not emitted: {silent})" if silent else ""))
    if FLAGS.heldout_file:
        heldout_format = "sentences" if FLAGS.input_format == "bible" else FLAGS.input_format
        heldout = vocab_extension.count_words(
            (s for d in read_documents(FLAGS.heldout_file, heldout_format, CorpusCounts()) for s in d),
            FLAGS.do_lower_case)
        label = f"held-out text {FLAGS.heldout_file}"
    else:
        heldout, label = words, "the input itself (pass --heldout_file for held-out text)"
    print(f"tokens per word on {label}: {vocab_extension.tokens_per_word(old, heldout):.4f} before, "
          f"{vocab_extension.tokens_per_word(new, heldout):.4f} after")

    changes = vocab_extension.changed_words(old, new, words)
    added = {token.token for token in extension.added}
    others = sorted((w for w in changes if w not in added), key=lambda w: -words[w])
    print(f"input words whose pieces changed: {len(changes)}: the {len(changes) - len(others)} added words "
          f"themselves, and {len(others)} words that begin with an added word (its pieces replace the start of "
          f"the old ones; the rest of the word keeps the base's ## pieces)" + (":" if others else ""))
    for word in others[:_SHOWN_CHANGES]:
        before, after = changes[word]
        print(f"  {word} ({words[word]}x): {' '.join(before)} -> {' '.join(after)}")
    if len(others) > _SHOWN_CHANGES:
        print(f"  ... and {len(others) - _SHOWN_CHANGES} more")


def run():
    app.run(main, required_flags=["output_file"])


if __name__ == "__main__":
    run()

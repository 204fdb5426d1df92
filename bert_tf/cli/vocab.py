"""bert-vocab: learn a WordPiece vocab from text (the package's own learner, bert_tf/text/wordpiece_learner.py), or
extend a released vocab with a domain's words (--extend).

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

Beside the vocab it writes the settings its text was normalized with (vocab.txt -> vocab.settings.json:
`do_lower_case`, `strip_accents`; bert_tf/text/tokenizer_settings.py), which every command reading the vocab
follows. Lower-cased without --strip_accents or --nostrip_accents, accents are stripped only where that changes at
most 0.1% of the text's words (bert_tf/text/accent_choice.py), and the choice is printed. With --extend the base
vocab's settings carry over.
"""

import dataclasses
import sys
from typing import Optional

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.config_schema import Section, field_option
from bert_tf.text import vocab_extension
from bert_tf.text.corpus_spec import LocalCorpus

EXTEND_GROUP = "extend a released vocab (--extend)"


@dataclasses.dataclass(frozen=True)
class VocabConfig(Section):
    """What `bert-vocab` learns a vocab from, or which released vocab it extends, and where it writes it.

    Example:
    >>> VocabConfig(corpus=LocalCorpus(input_format="bible"), vocab_size=8000, output_file="vocab.txt").vocab_size
    8000
    """

    HELP_GROUP = "learn a vocab"
    corpus: LocalCorpus = LocalCorpus()
    vocab_size: int = field_option(30522, "Target vocab size, special tokens included (the learner may return up to "
                                          "5% fewer). Not used with --extend.")
    do_lower_case: Optional[bool] = field_option(None, "Lower-case the text first (an uncased vocab). Default: "
                                                       "true; with --extend, the base vocab's settings.")
    strip_accents: Optional[bool] = field_option(None, "Strip accents first (ü -> u, が -> か). Default: only where "
                                                       "that changes at most 0.1% of the text's words, if lower-"
                                                       "casing; with --extend, the base vocab's settings.")
    output_file: Optional[str] = field_option(None, "Where to write the vocab, one token per line.")
    extend: Optional[str] = field_option(None, "A released vocab (BASE_VOCAB) to extend with the input's words "
                                               "instead of learning one: they fill its [unused*] rows; every other "
                                               "line stays.", group=EXTEND_GROUP)
    keep_unused: int = field_option(vocab_extension.DEFAULT_KEEP_UNUSED, "With --extend: the first this many "
                                    "[unused*] rows stay free for your own special tokens.", group=EXTEND_GROUP)
    max_new_tokens: Optional[int] = field_option(None, "With --extend: at most this many new tokens IN ALL; beyond "
                                                       "the free [unused*] rows they are appended (the vocab grows). "
                                                       "Default: fill the free [unused*] rows only (the size stays).",
                                                 group=EXTEND_GROUP)
    min_frequency: int = field_option(vocab_extension.DEFAULT_MIN_FREQUENCY, "With --extend: a word occurring fewer "
                                      "times in the input is not added.", group=EXTEND_GROUP)
    heldout_file: Optional[str] = field_option(None, "Held-out text (the --input_format's format) to report the "
                                                     "vocab on: the [UNK] share of pieces and of words, pieces per "
                                                     "word, characters per piece (with --extend: tokens per word, "
                                                     "before and after). Default: 1% of the input's sentences, "
                                                     "held out from learning.")


_SHOWN_CHANGES = 30


def main(config):
    from bert_tf.text.corpus import CorpusCounts

    counts = CorpusCounts()
    documents = config.corpus.read(counts)
    sentences = (sentence for document in documents for sentence in document)
    if config.extend:
        extend(config, sentences, counts)
        return
    from bert_tf.text.vocab_learning import check_vocab_size, learn_vocab_from_words, too_few_tokens, write_vocab
    from bert_tf.text.vocab_report import HELD_OUT_EVERY, hold_out, report_vocab
    from bert_tf.text.word_counting import count_words

    check_vocab_size(config.vocab_size)
    held_out = []
    if not config.heldout_file:
        sentences = hold_out(sentences, held_out)
    settings, words = count_learning_words(config, sentences)
    learned = learn_vocab_from_words(words, config.vocab_size)
    write_vocab(learned.tokens, config.output_file)
    written = settings.write_beside(config.output_file)
    print(f"wrote {len(learned.tokens)} tokens to {config.output_file} (learned from {counts.lines} lines of "
          f"{counts.files} input(s); {counts.undecodable_lines} with undecodable bytes)", flush=True)
    if written:
        print(f"wrote its settings ({settings.describe()}) to {written}", flush=True)
    print(learned.alphabet_line(), flush=True)
    if config.heldout_file:
        held_out, label = heldout_sentences(config), f"held-out text {config.heldout_file}"
    else:
        label = f"held-out text: every {HELD_OUT_EVERY}th sentence of the input ({len(held_out)}), not learned from"
    if held_out:
        report = report_vocab(learned.tokens, count_words(held_out, settings.normalizer(), processes=1).words)
        print(report.line(label), flush=True)
    else:
        print(f"no held-out report: the input has fewer than {HELD_OUT_EVERY} sentences; pass --heldout_file",
              flush=True)
    warning = too_few_tokens(len(learned.tokens), config.vocab_size)
    if warning:
        print(f"{COMMAND.program}: warning: {warning}", file=sys.stderr, flush=True)


def count_learning_words(config, sentences):
    """The settings to learn with and the text's words counted under them: the flags given; else lower-cased, and
    accents stripped where that changes almost no word of the text (decided on the words counted without stripping,
    then stripped; the choice and its reason are printed)."""
    from bert_tf.text.accent_choice import choose_strip_accents, stripped_word_counts
    from bert_tf.text.tokenizer_settings import TokenizerSettings
    from bert_tf.text.word_counting import count_words

    do_lower_case = True if config.do_lower_case is None else config.do_lower_case
    if config.strip_accents is not None or not do_lower_case:
        settings = TokenizerSettings.of(do_lower_case, config.strip_accents)
        return settings, count_words(sentences, settings.normalizer()).words
    words = count_words(sentences, TokenizerSettings.of(True, False).normalizer()).words
    choice = choose_strip_accents(words)
    print(f"accents: {choice.reason()}", flush=True)
    if choice.strip_accents:
        words = stripped_word_counts(words)
    return TokenizerSettings.of(do_lower_case, choice.strip_accents), words


def heldout_sentences(config):
    """The sentences of --heldout_file, read in the --input_format's format (the Bible's as sentences)."""
    from bert_tf.text.corpus import CorpusCounts, read_documents

    heldout_format = "sentences" if config.corpus.input_format == "bible" else config.corpus.input_format
    return [s for d in read_documents(config.heldout_file, heldout_format, CorpusCounts()) for s in d]


def extend(config, sentences, counts):
    """Extends --extend's vocab with the input's words, writes it and prints what changed."""
    from bert_tf.errors import InputError
    from bert_tf.text.tokenizer import FullTokenizer
    from bert_tf.text.tokenizer_settings import TokenizerSettings
    from bert_tf.text.vocab_learning import write_vocab
    from bert_tf.text.vocabulary import Vocabulary

    base = Vocabulary.from_file(config.extend)
    settings = TokenizerSettings.for_vocab(config.extend, config.do_lower_case, config.strip_accents)
    words = vocab_extension.count_words(sentences, settings.do_lower_case, settings.strip_accents)
    if not words:
        raise InputError("The text to mine words from is empty: pass UTF-8 text files with --input_file.")
    extension = vocab_extension.extend_vocab(base, words, config.keep_unused, config.max_new_tokens,
                                             config.min_frequency)
    write_vocab(extension.tokens, config.output_file)
    settings.write_beside(config.output_file)
    appended = sum(token.appended for token in extension.added)
    print(f"wrote {len(extension.tokens)} tokens to {config.output_file}: {base.source} ({base.size} tokens) with "
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
    if config.heldout_file:
        heldout = vocab_extension.count_words(heldout_sentences(config), settings.do_lower_case,
                                              settings.strip_accents)
        label = f"held-out text {config.heldout_file}"
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


COMMAND = Command(VocabConfig, main, required=("output_file",))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

"""bert-vocab: learn a WordPiece vocab from text with tensorflow-text's bert_vocab_from_dataset.

The special tokens [PAD] (id 0), [UNK], [CLS], [SEP], [MASK] always come first. Examples:

  bert-vocab --input_file='corpus/*.txt' --vocab_size=30522 --output_file=vocab.txt
  bert-vocab --input_format=bible --vocab_size=8000 --output_file=bible_vocab.txt
"""

from absl import flags

from bert_tf.cli import app, flag_groups

FLAGS = flags.FLAGS

flag_groups.define_corpus_flags(["sentences", "text", "bible"])
flags.DEFINE_integer("vocab_size", 30522, "Target vocab size, special tokens included (the learner may return "
                                          "up to 5% fewer).")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents first (an uncased vocab).")
flags.DEFINE_string("output_file", None, "Where to write the vocab, one token per line.")


def main(argv):
    del argv
    from bert_tf.text.corpus import CorpusCounts
    from bert_tf.text.vocab_learning import learn_vocab, write_vocab

    counts = CorpusCounts()
    documents = flag_groups.read_corpus(counts)
    sentences = (sentence for document in documents for sentence in document)
    tokens = learn_vocab(sentences, FLAGS.vocab_size, do_lower_case=FLAGS.do_lower_case)
    write_vocab(tokens, FLAGS.output_file)
    print(f"wrote {len(tokens)} tokens to {FLAGS.output_file} (learned from {counts.lines} lines of "
          f"{counts.files} input(s); {counts.undecodable_lines} with undecodable bytes)", flush=True)


def run():
    app.run(main, required_flags=["output_file"])


if __name__ == "__main__":
    run()

"""bert-convert: released Google TF1 checkpoints and HF BERT safetensors -> this package's checkpoint directory.

  bert-convert --from tf1 --input uncased_L-12_H-768_A-12 --output converted/bert_base_uncased
  bert-convert --from hf --input all-MiniLM-L6-v2 --output converted/minilm

The output holds bert_config.json, vocab.txt and ckpt-0, which `bert_tf.load_encoder` / `load_pretrainer`,
bert-pretrain --init_checkpoint, bert-export and bert-finetune read. A wrong flag or input ends it with exit
status 1 and one line naming the cause.
"""

import sys

from absl import app, flags

from bert_tf.checkpoints.convert_hf import convert_hf
from bert_tf.checkpoints.convert_tf1 import convert_tf1

FLAGS = flags.FLAGS

# "from" is a Python keyword: the flag is read as FLAGS["from"].value.
flags.DEFINE_enum("from", None, ["tf1", "hf"], "Source format: tf1 (a released Google BERT directory: "
                  "bert_model.ckpt.*, bert_config.json, vocab.txt) or hf (config.json, model.safetensors, vocab.txt).")
flags.DEFINE_string("input", None, "The source model directory.")
flags.DEFINE_string("output", None, "Where the converted checkpoint directory goes (must not hold a checkpoint).")


def parse_flags(argv):
    """absl's flag parsing with its errors on one line (absl adds a second, about --helpshort)."""
    try:
        return FLAGS(argv)
    except flags.Error as e:
        sys.exit(f"bert-convert: error: {e}")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    converter = {"tf1": convert_tf1, "hf": convert_hf}[FLAGS["from"].value]
    try:
        result = converter(FLAGS.input, FLAGS.output)
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        sys.exit(f"bert-convert: error: {e}")
    print(result, flush=True)


def run():
    flags.mark_flags_as_required(["from", "input", "output"])
    app.run(main, flags_parser=parse_flags)


if __name__ == "__main__":
    run()

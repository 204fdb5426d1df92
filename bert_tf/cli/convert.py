"""bert-convert: released Google TF1 checkpoints and HF BERT safetensors -> this package's checkpoint directory.

  bert-convert --from tf1 --input uncased_L-12_H-768_A-12 --output converted/bert_base_uncased
  bert-convert --from hf --input all-MiniLM-L6-v2 --output converted/minilm

The output holds bert_config.json, vocab.txt and ckpt-0, which `bert_tf.load_encoder` / `load_pretrainer`,
bert-pretrain --init_checkpoint, bert-export and bert-finetune read. A wrong flag or input ends it with exit
status 2 and one line naming the cause (see `bert_tf.cli.app`).
"""

from absl import flags

from bert_tf.checkpoints.convert_hf import convert_hf
from bert_tf.checkpoints.convert_tf1 import convert_tf1
from bert_tf.cli import app

FLAGS = flags.FLAGS

# "from" is a Python keyword: the flag is read as FLAGS["from"].value.
flags.DEFINE_enum("from", None, ["tf1", "hf"], "Source format: tf1 (a released Google BERT directory: "
                  "bert_model.ckpt.*, bert_config.json, vocab.txt) or hf (config.json, model.safetensors, vocab.txt).")
flags.DEFINE_string("input", None, "The source model directory.")
flags.DEFINE_string("output", None, "Where the converted checkpoint directory goes (must not hold a checkpoint).")


def main(argv):
    del argv
    converter = {"tf1": convert_tf1, "hf": convert_hf}[FLAGS["from"].value]
    result = converter(FLAGS.input, FLAGS.output)
    print(result, flush=True)


def run():
    app.run(main, required_flags=["from", "input", "output"])


if __name__ == "__main__":
    run()

"""bert-fill-mask: the model's top-k words for each [MASK] in raw text, through the SavedModels bert-export wrote.

  bert-fill-mask --saved_model=exported --text="Please let your handmaid speak a word to my lord the [MASK]."
      -> [MASK] 1: king 0.7104, lord 0.0523, earth 0.0311, people 0.0290, servant 0.0201

--saved_model is the --output_dir of `bert-export --model_dir=...` (it holds encoder_mlm/<version> and
preprocessing/<version>; the highest version of each is used). The text is tokenized by the exported
preprocessing model, with the [MASK] id put where the text says [MASK] (the Python function:
`bert_tf.serving.fill_mask.MaskFiller`). A wrong flag or input ends it with exit status 2 and one line naming the
cause (see `bert_tf.cli.app`).
"""

import os

from absl import flags

from bert_tf.cli import app
from bert_tf.errors import InputError
from bert_tf.file_io import is_remote

FLAGS = flags.FLAGS

flags.DEFINE_string("saved_model", None, "The folder bert-export wrote (--output_dir), holding encoder_mlm/<version> "
                    "and preprocessing/<version>.")
flags.DEFINE_multi_string("text", None, "Raw text with one or more [MASK] where words are to be predicted; repeat "
                          "the flag for several texts.")
flags.DEFINE_integer("top_k", 5, "Words shown for each [MASK], most probable first.")

MASK = "[MASK]"


def check_inputs():
    """What needs no TensorFlow: the folder exists, every text has a [MASK], top_k is positive."""
    if not is_remote(FLAGS.saved_model) and not os.path.isdir(FLAGS.saved_model):
        raise InputError(f"--saved_model {FLAGS.saved_model} does not exist or is not a directory: pass the "
                         f"--output_dir of bert-export (it holds encoder_mlm/1 and preprocessing/1).")
    for text in FLAGS.text:
        if MASK not in text:
            raise InputError(f"--text={text!r} has no {MASK}: write {MASK} where the word to predict goes, e.g. "
                             f"--text=\"The capital of France is {MASK}.\"")
    if FLAGS.top_k < 1:
        raise InputError(f"--top_k={FLAGS.top_k} must be a positive integer.")


def main(argv):
    del argv
    from bert_tf.serving.fill_mask import MaskFiller

    filler = MaskFiller(FLAGS.saved_model)
    for text in FLAGS.text:
        predictions = filler(text, FLAGS.top_k)
        if len(FLAGS.text) > 1:
            print(text)
        for number, words in enumerate(predictions, 1):
            print(f"{MASK} {number}: " + ", ".join(f"{token} {p:.4f}" for token, p in words), flush=True)


def run():
    app.run(main, required_flags=["saved_model", "text"], check_inputs=check_inputs)


if __name__ == "__main__":
    run()

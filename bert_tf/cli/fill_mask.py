"""bert-fill-mask: the model's top-k words for each [MASK] in raw text, through the SavedModels bert-export wrote.

  bert-fill-mask --saved_model=exported --text="Please let your handmaid speak a word to my lord the [MASK]."
      -> [MASK] 1: king 0.7104, lord 0.0523, earth 0.0311, people 0.0290, servant 0.0201

--saved_model is the --output_dir of `bert-export --model_dir=...` (it holds encoder_mlm/<version> and
preprocessing/<version>; the highest version of each is used). The text is tokenized by the exported
preprocessing model, with the [MASK] id put where the text says [MASK] (the Python function:
`bert_tf.serving.fill_mask.MaskFiller`). A wrong flag or input ends it with exit status 2 and one line naming the
cause (see `bert_tf.cli.app`).
"""

import dataclasses
import os
import typing
from typing import Optional

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.config_schema import Section, field_option
from bert_tf.errors import InputError
from bert_tf.file_io import is_remote

MASK = "[MASK]"


@dataclasses.dataclass(frozen=True)
class FillMaskConfig(Section):
    """The exported models `bert-fill-mask` reads, the texts and how many words to show.

    Example:
    >>> FillMaskConfig(saved_model="exported", text=("The [MASK] sat down.",)).top_k
    5
    """

    saved_model: Optional[str] = field_option(None, "The folder bert-export wrote (--output_dir), holding "
                                                    "encoder_mlm/<version> and preprocessing/<version>.")
    text: Optional[typing.Tuple[str, ...]] = field_option(None, "Raw text with one or more [MASK] where words are to "
                                                                "be predicted; repeat the flag for several texts.")
    top_k: int = field_option(5, "Words shown for each [MASK], most probable first.")


def check(config):
    """What needs no TensorFlow: the folder exists, every text has a [MASK], top_k is positive."""
    if not is_remote(config.saved_model) and not os.path.isdir(config.saved_model):
        raise InputError(f"--saved_model {config.saved_model} does not exist or is not a directory: pass the "
                         f"--output_dir of bert-export (it holds encoder_mlm/1 and preprocessing/1).")
    for text in config.text:
        if MASK not in text:
            raise InputError(f"--text={text!r} has no {MASK}: write {MASK} where the word to predict goes, e.g. "
                             f"--text=\"The capital of France is {MASK}.\"")
    if config.top_k < 1:
        raise InputError(f"--top_k={config.top_k} must be a positive integer.")


def main(config):
    from bert_tf.serving.fill_mask import MaskFiller

    filler = MaskFiller(config.saved_model)
    for text in config.text:
        predictions = filler(text, config.top_k)
        if len(config.text) > 1:
            print(text)
        for number, words in enumerate(predictions, 1):
            print(f"{MASK} {number}: " + ", ".join(f"{token} {p:.4f}" for token, p in words), flush=True)


COMMAND = Command(FillMaskConfig, main, check=check, required=("saved_model", "text"))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

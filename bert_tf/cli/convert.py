"""bert-convert: released Google TF1 checkpoints and HF BERT safetensors -> this package's model directory, and back
out to HF transformers and keras-hub.

  bert-convert --from tf1 --input uncased_L-12_H-768_A-12 --output converted/bert_base_uncased
  bert-convert --from hf --input all-MiniLM-L6-v2 --output converted/minilm
  bert-convert --to hf --input runs/demo --output hf/demo              # BertForPreTraining folder
  bert-convert --to keras_hub --input runs/demo --output keras_hub/demo  # keras-hub preset folder

--from writes bert_config.json, vocab.txt (and vocab.settings.json from an HF tokenizer_config.json) and ckpt-0,
which `bert_tf.load_encoder` / `load_pretrainer`, bert-pretrain --init_checkpoint, bert-export and bert-finetune
read. --to reads such a directory (from bert-convert or bert-pretrain), with its vocab's settings unless
--do_lower_case / --strip_accents are given. A wrong flag or input ends it with exit status 2 and one line naming
the cause (see `bert_tf.cli.app`).
"""

import dataclasses
from typing import Optional

from bert_tf.cli import app
from bert_tf.cli.command import Command
from bert_tf.config_schema import Section, field_option
from bert_tf.errors import InputError
from bert_tf.text.tokenizer_settings import DO_LOWER_CASE_HELP, STRIP_ACCENTS_HELP


@dataclasses.dataclass(frozen=True)
class ConvertConfig(Section):
    """Which way `bert-convert` converts (`source`, the --from flag: into this package's format; `target`, --to:
    out of it), and the two directories.

    Example:
    >>> ConvertConfig(source="tf1", input="uncased_L-12_H-768_A-12", output="converted").source
    'tf1'
    """

    source: Optional[str] = field_option(None, "Source format: tf1 (a released Google BERT directory: "
                                               "bert_model.ckpt.*, bert_config.json, vocab.txt) or hf (config.json, "
                                               "model.safetensors, vocab.txt).", flag="from", choices=("tf1", "hf"))
    target: Optional[str] = field_option(None, "Instead of --from: export this package's model directory (--input) "
                                               "as an HF BertForPreTraining folder or a keras-hub preset folder.",
                                         flag="to", choices=("hf", "keras_hub"))
    input: Optional[str] = field_option(None, "The source model directory.")
    output: Optional[str] = field_option(None, "Where the converted directory goes (new or empty).")
    allow_vocab_mismatch: bool = field_option(False, "With --from: accept a vocab.txt whose size differs from the "
                                                     "config's vocab_size.")
    do_lower_case: Optional[bool] = field_option(None, "With --to: " + DO_LOWER_CASE_HELP + " Written into the "
                                                       "tokenizer config.")
    strip_accents: Optional[bool] = field_option(None, "With --to: " + STRIP_ACCENTS_HELP)


def main(config):
    source, target = config.source, config.target
    if bool(source) == bool(target):
        raise InputError("Pass exactly one of --from (tf1, hf: into this package's format) and --to (hf, "
                         "keras_hub: out of it).")
    if source:
        from bert_tf.conversion import convert_hf, convert_tf1

        converter = {"tf1": convert_tf1, "hf": convert_hf}[source]
        print(converter(config.input, config.output, allow_vocab_mismatch=config.allow_vocab_mismatch), flush=True)
        return
    from bert_tf.conversion.to_hf import export_hf
    from bert_tf.conversion.to_keras_hub import export_keras_hub
    from bert_tf.model_dir import tokenizer_settings

    settings = tokenizer_settings(config.input, config.do_lower_case, config.strip_accents)
    exporter = {"hf": export_hf, "keras_hub": export_keras_hub}[target]
    print(exporter(config.input, config.output, settings=settings), flush=True)


COMMAND = Command(ConvertConfig, main, required=("input", "output"))


def run():
    app.run(COMMAND)


if __name__ == "__main__":
    run()

"""The fault probe: bad inputs a user can give each command, and the one line each must end in.

One row per case, grouped by command: the arguments, the exit code (2 bad input, 1 internal failure, 3 non-finite
loss; see bert_tf/cli/app.py) and words the error line must hold. In arguments and words, `{name}` is a path from
`paths` below: small real files built once for the module, and `{out}`, an empty folder of the row's own. Add a row
for every bad input found; add a file to `paths` when a row needs one.
"""

import collections
import errno
import json
import os
import shutil
import socket
import stat
import subprocess
import sys

import pytest
import tensorflow as tf

from bert_tf import BertPretrainer
from bert_tf.cli import exit_codes
from bert_tf.errors import InputError, InputFileNotFoundError, NonFiniteLossError
from bert_tf.model_dir import write_config, write_model_dir
from bert_tf.text.bible import write_bible_split
from bert_tf.text.tokenizer_settings import TokenizerSettings
from bert_tf.text.vocab_learning import write_vocab as write_vocab_file
from helpers import run_cli, tiny_config
from pretraining_records import vocab_tokens, write_records, write_vocab

# `env`: variables added to the command's environment (it then runs in a child process), e.g. to hide an extra.
Row = collections.namedtuple("Row", "case args code words env", defaults=(None,))

ROWS = {
    "vocab": [
        Row("directory as input", ["--input_file={dir}", "--input_format=text", "--output_file={out}/vocab.txt"], 2,
            ["{dir}: Is a directory", "pass a file"]),
        Row("output below a file", ["--input_file={corpus}", "--vocab_size=30", "--output_file={file}/vocab.txt"], 2,
            ["{file} is a file, not a directory"]),
        Row("required flag missing", ["--input_file={corpus}"], 2, ["--output_file is required"]),
        Row("unknown flag", ["--vocab-size=30", "--output_file={out}/vocab.txt"], 2,
            ["Unknown command line flag 'vocab-size'"]),
        Row("unquoted glob", ["--input_file={corpus}", "{vocab}", "--output_file={out}/vocab.txt"], 2,
            ["unexpected arguments ['{vocab}']", "quote globs"]),
        Row("empty corpus", ["--input_file={empty}", "--vocab_size=30", "--output_file={out}/vocab.txt"], 2,
            ["is empty", "--input_file"]),
        Row("binary corpus", ["--input_file={records}", "--vocab_size=30", "--output_file={out}/vocab.txt"], 2,
            ["input_file {records} is not UTF-8 text", "NUL byte"]),
        Row("base vocab to extend missing", ["--input_file={corpus}", "--extend={out}/missing.txt",
                                             "--output_file={out}/vocab.txt"], 2,
            ["{out}/missing.txt", "does not exist"]),
        Row("negative keep_unused", ["--input_file={corpus}", "--extend={vocab}", "--keep_unused=-1",
                                     "--output_file={out}/vocab.txt"], 2, ["--keep_unused=-1 must be >= 0"]),
        Row("output a full character device", ["--input_file={corpus}", "--vocab_size=30", "--output_file={out}/full"],
            2, ["{out}/full", "ENOSPC"]),
        Row("output a FIFO", ["--input_file={corpus}", "--vocab_size=30", "--output_file={out}/fifo"], 2,
            ["{out}/fifo is a FIFO"]),
        Row("flag contradicting the base vocab's settings", ["--input_file={corpus}", "--extend={cased_vocab}",
                                                              "--do_lower_case", "--output_file={out}/vocab.txt"], 2,
            ["--do_lower_case contradicts {cased_vocab_settings}", "drop the flag"]),
    ],
    "create_pretraining_data": [
        Row("mistyped --set field", ["--input_file={corpus}", "--output_file={out}/train.tfrecord",
                                     "--vocab_file={vocab}", "--set=max_seq_lenght=64"], 2,
            ["unknown field(s) ['max_seq_lenght']", "Did you mean 'instances.max_seq_length'?"]),
        Row("vocab file missing", ["--input_file={corpus}", "--output_file={out}/train.tfrecord",
                                   "--vocab_file={out}/missing.txt"], 2, ["{out}/missing.txt"]),
        Row("output is the corpus", ["--input_file={corpus}", "--output_file={corpus}", "--vocab_file={vocab}"], 2,
            ["output_file '{corpus}' is an input file too", "destroy an input corpus file"]),
        Row("output is the vocab", ["--input_file={corpus}", "--output_file={vocab}", "--vocab_file={vocab}"], 2,
            ["output_file '{vocab}' is an input file too", "destroy the vocab file"]),
        Row("empty corpus", ["--input_file={empty}", "--output_file={out}/train.tfrecord", "--vocab_file={vocab}"], 2,
            ["gave no training instance", "nothing was written"]),
        Row("binary corpus", ["--input_file={records}", "--output_file={out}/train.tfrecord", "--vocab_file={vocab}"],
            2, ["input_file {records} is not UTF-8 text"]),
        Row("vocab without [MASK]", ["--input_file={corpus}", "--output_file={out}/train.tfrecord",
                                     "--vocab_file={vocab_without_mask}"], 2,
            ["lacks the special token(s) ['[MASK]']", "bert-vocab"]),
        Row("packed rows of one instance", ["--input_file={corpus}", "--output_file={out}/train.tfrecord",
                                            "--vocab_file={vocab}", "--pack", "--max_instances_per_row=1"], 2,
            ["max_instances_per_row=1 packs nothing", "use at least 2"]),
        Row("output a full character device", ["--input_file={corpus}", "--output_file={out}/full",
                                               "--vocab_file={vocab}"], 2, ["{out}/full", "ENOSPC"]),
        Row("output a socket", ["--input_file={corpus}", "--output_file={out}/socket", "--vocab_file={vocab}"], 2,
            ["{out}/socket is a socket"]),
        Row("output a block device", ["--input_file={corpus}", "--output_file={out}/block", "--vocab_file={vocab}"],
            2, ["{out}/block is a block device"]),
        Row("word segmenter without whole-word masking", ["--input_file={corpus}", "--output_file={out}/train.tfrecord",
                                                          "--vocab_file={vocab}", "--word_segmenter=jieba"], 2,
            ["word_segmenter", "add --do_whole_word_mask"]),
        Row("word segmenter extra not installed", ["--input_file={corpus}", "--output_file={out}/train.tfrecord",
                                                   "--vocab_file={vocab}", "--word_segmenter=jieba",
                                                   "--do_whole_word_mask"], 2,
            ["word_segmenter='jieba' needs the optional package jieba", "pip install 'bert_tf[chinese]'"],
            env={"PYTHONPATH": "{without_jieba}"}),
        Row("flag contradicting the vocab's settings", ["--input_file={corpus}", "--output_file={out}/train.tfrecord",
                                                         "--vocab_file={cased_vocab}", "--do_lower_case"], 2,
            ["--do_lower_case contradicts {cased_vocab_settings}", "(do_lower_case=false, strip_accents=false)"]),
        Row("vocab settings file not JSON", ["--input_file={corpus}", "--output_file={out}/train.tfrecord",
                                             "--vocab_file={broken_settings_vocab}"], 2,
            ["{broken_settings_vocab_settings} is not JSON", "write it again with bert-vocab"]),
    ],
    "create_pretraining_data_beam": [
        Row("flag contradicting the vocab's settings", ["--input_file={corpus}", "--output_prefix={out}/train",
                                                         "--vocab_file={cased_vocab}", "--strip_accents"], 2,
            ["--strip_accents contradicts {cased_vocab_settings}"]),
    ],
    "inspect_data": [
        Row("corrupt record file", ["--input_file={corrupt_records}", "--vocab_file={vocab}"], 2,
            ["{corrupt_records}", "corrupted record", "recreate it"]),
        Row("text file as records", ["--input_file={corpus}", "--vocab_file={vocab}"], 2,
            ["Is this even a TFRecord", "recreate it"]),
    ],
    "pretrain": [
        Row("recipe missing", ["--config=no_such_recipe", "--model_dir={out}/run"], 2, ["no_such_recipe"]),
        Row("learning rate nan", ["--config={recipe}", "--model_dir={out}/run", "--learning_rate=nan"], 2,
            ["learning_rate=nan must be a finite number"]),
        Row("row packing of one instance", ["--config={recipe}", "--model_dir={out}/run", "--row_packing",
                                            "--set=row_packing.max_instances_per_row=1"], 2,
            ["row_packing.max_instances_per_row=1 must be at least 2"]),
        Row("quoted number in a recipe field", ["--config={recipe}", "--model_dir={out}/run",
                                                "--set=optimizer.beta_1='0.9'"], 2,
            ["optimizer.beta_1='0.9' must be a finite number: write it without quotes"]),
        Row("word for a number in the model", ["--config={recipe}", "--model_dir={out}/run",
                                               "--set=model.layer_norm_eps=tiny"], 2,
            ["model.layer_norm_eps='tiny' must be a finite number"]),
        Row("zero batch", ["--config={recipe}", "--model_dir={out}/run", "--train_batch_size=0"], 2,
            ["train_batch_size=0 must be a positive integer"]),
        Row("phase micro-batch zero", ["--config={recipe}", "--model_dir={out}/run",
                                       "--set=phases.0.max_micro_batch_size=0"], 2,
            ["phases[0].max_micro_batch_size=0 must be a positive integer or null"]),
        Row("phase micro-batch not a divisor", ["--config={recipe}", "--model_dir={out}/run",
                                                "--train_batch_size=4", "--set=phases.0.max_micro_batch_size=3"], 2,
            ["per-replica batch of 4 sequences does not split into micro-batches of max_micro_batch_size=3"]),
        Row("loop time bound not positive", ["--config={recipe}", "--model_dir={out}/run",
                                             "--set=max_seconds_per_loop=0"], 2,
            ["max_seconds_per_loop=0 must be a positive number of seconds"]),
        Row("set without a value", ["--config={recipe}", "--model_dir={out}/run", "--set=seed"], 2,
            ["--set='seed' must be FIELD=VALUE"]),
        Row("eval file missing", ["--config={recipe}", "--model_dir={out}/run", "--eval_input_file={out}/no.tfrecord"],
            2, ["eval input (--eval_input_file)", "{out}/no.tfrecord", "matches no file"]),
        Row("records of another length", ["--config={recipe}", "--model_dir={out}/run", "--max_seq_length=32",
                                          "--set=model.max_position_embeddings=32"], 2,
            ["phase 'seq16'", "do not match max_seq_length=32"]),
        Row("mixed input set missing", ["--config={recipe}", "--model_dir={out}/run",
                                        "--set=phases.0.mixed_inputs=[{{input_file: '{out}/general-*.tfrecord', "
                                        "share: 0.1}}]"], 2,
            ["phase 'seq16' mixed_inputs[0]", "{out}/general-*.tfrecord", "matches no file"]),
        Row("mixed input shares leave none to the phase", ["--config={recipe}", "--model_dir={out}/run",
                                                           "--set=phases.0.mixed_inputs=[{{input_file: '{records}', "
                                                           "share: 0.6}}, {{input_file: '{records}', share: 0.5}}]"], 2,
            ["phases[0].mixed_inputs=", "share"]),
        Row("ids above the vocab", ["--config={recipe}", "--model_dir={out}/run", "--vocab_file={small_vocab}"], 2,
            ["phase 'seq16'", "{records}", "outside [0, vocab_size=16)"]),
        # The records of one vocab trained with another of the same size: every id is in range, the specials are not.
        Row("records of another vocab", ["--config={recipe}", "--model_dir={out}/run", "--vocab_file={shifted_vocab}"],
            2, ["phase 'seq16'", "Record 0 of {records} has id 2 ('[unused1]' in this vocab) at position 0, where "
                "[CLS] goes", "has [CLS] at id 5", "pass the vocab they were made with as --vocab_file"]),
        Row("[MASK] of another vocab", ["--config={recipe}", "--model_dir={out}/run", "--input_file={records16}",
                                        "--vocab_file={mask_moved_vocab}"], 2,
            ["masked positions of the first records of {records16} hold id 4 most often ('w0' in this vocab",
             "has [MASK] at id 5"]),
        Row("vocab_file forgotten", ["--config={recipe_without_vocab}", "--model_dir={out}/run"], 2,
            ["No vocab for this run: pass --vocab_file=VOCAB"]),
        Row("vocab smaller than the model", ["--config={recipe}", "--model_dir={out}/run",
                                             "--set=model.vocab_size=100"], 2,
            ["has 64 tokens but the model's vocab_size is 100", "--set=model.vocab_size=64"]),
        Row("eval file without records", ["--config={recipe}", "--model_dir={out}/run",
                                          "--eval_input_file={empty_records}"], 2,
            ["the eval input (--eval_input_file)", "{empty_records}", "hold(s) no record"]),
        Row("corrupt train records", ["--config={recipe}", "--model_dir={out}/run",
                                      "--input_file={corrupt_records}"], 2, ["{corrupt_records}", "recreate it"]),
        Row("model_dir is a file", ["--config={recipe}", "--model_dir={file}"], 2, ["{file}"]),
        Row("peak_tflops zero", ["--config={recipe}", "--model_dir={out}/run", "--peak_tflops=0"], 2,
            ["--peak_tflops=0.0 must be a positive number"]),
        Row("model_dir a FIFO", ["--config={recipe}", "--model_dir={out}/fifo"], 2, ["{out}/fifo is a FIFO"]),
        # Wrong device, refused before the first step: nothing trains on this machine's CPU by mistake.
        Row("TPU strategy without a TPU", ["--config={recipe}", "--model_dir={out}/run", "--strategy=tpu",
                                           "--tpu=local"], 2,
            ["--strategy=tpu found no TPU", "this machine has 1 CPU, no GPU, no TPU",
             "pip install -r requirements-tpu-vm.txt"]),
        Row("GPU platform without a GPU", ["--config=bert_base_paper", "--model_dir={out}/run", "--platform=a100_80gb",
                                           "--input_file={records}", "--input_file={records}", "--strategy=mirrored"],
            2,
            ["--platform=a100_80gb is for GPUs, but the run's replicas are on CPU:0", 'pip install ".[gpu]"']),
        Row("TPU platform without a TPU", ["--config=bert_base_paper", "--model_dir={out}/run", "--platform=tpu_v4",
                                           "--input_file={records}", "--input_file={records}"], 2,
            ["--platform=tpu_v4 is for TPUs, but the run's replicas are on CPU:0",
             "pip install -r requirements-tpu-vm.txt"]),
        Row("all-reduce choice without multi_worker", ["--config={recipe}", "--model_dir={out}/run",
                                                       "--all_reduce_implementation=nccl"], 2,
            ["--all_reduce_implementation=nccl is only used with --strategy=multi_worker"]),
        Row("whole-step XLA on CPU replicas", ["--config={recipe}", "--model_dir={out}/run", "--strategy=mirrored",
                                               "--jit_compile", "--set=jit_compile_scope=step"], 2,
            ["jit_compile_scope=step compiles the whole step, which MirroredStrategy can do on GPUs only"]),
        # Rows packed in the pipeline with fewer slots than one instance predicts failed inside tf.data.
        Row("row packing with fewer slots than an instance", ["--config={recipe}", "--model_dir={out}/run",
                                                              "--row_packing",
                                                              "--set=row_packing.max_predictions_per_row=2"], 2,
            ["row_packing.max_predictions_per_row=2 must be at least the most predictions of one instance, "
             "max_predictions_per_seq=3"]),
        # Rows packed for the original 15% (6 slots at 16 tokens) masked again at 50%: refused before the first
        # step, not stopped inside tf.data once a row draws more.
        Row("packed rows with too few slots for the dynamic rate", ["--config={recipe}", "--model_dir={out}/run",
                                                                    "--input_file={packed16}", "--dynamic_masking",
                                                                    "--set=dynamic_masking.masked_lm_prob=0.5"], 2,
            ["phase 'seq16' (--input_file): The packed rows of {packed16} have 6 prediction slots",
             "masked_lm_prob=0.5 can draw up to 9", "--pack --masked_lm_prob=0.5",
             "--set=dynamic_masking.masked_lm_prob=0.187"]),
    ],
    "export": [
        Row("model_dir missing", ["--model_dir={out}/none", "--output_dir={out}/exported"], 2,
            ["--model_dir {out}/none does not exist"]),
        Row("model_dir a file", ["--model_dir={file}", "--output_dir={out}/exported"], 2,
            ["--model_dir {file} is not a directory"]),
        Row("seq length over the positions", ["--model_dir={model}", "--output_dir={out}/exported",
                                               "--max_seq_length=600"], 2,
            ["seq_length=600 must lie in [3, max_position_embeddings=32]"]),
        Row("output_dir a character device", ["--model_dir={model}", "--max_seq_length=16",
                                              "--output_dir={out}/null"], 2,
            ["{out}/null is a character device, not a directory"]),
        Row("output_dir a FIFO", ["--model_dir={model}", "--max_seq_length=16", "--output_dir={out}/fifo"], 2,
            ["{out}/fifo is a FIFO (named pipe), not a directory"]),
        Row("flag contradicting the vocab's settings", ["--model_dir={cased_model}", "--max_seq_length=16",
                                                         "--output_dir={out}/exported", "--strip_accents"], 2,
            ["--strip_accents contradicts {cased_model}/vocab.settings.json"]),
    ],
    "evaluate": [
        Row("model_dir missing", ["--model_dir={out}/none", "--eval_input_file={records}"], 2,
            ["--model_dir {out}/none does not exist", "bert-pretrain or bert-convert"]),
        Row("records longer than the model", ["--model_dir={model}", "--eval_input_file={records64}"], 2,
            ["records of {records64} have 64 tokens", "max_position_embeddings=32"]),
        Row("eval file missing", ["--model_dir={model}", "--eval_input_file={out}/none.tfrecord"], 2,
            ["{out}/none.tfrecord"]),
        Row("over the run's results", ["--model_dir={model}", "--eval_input_file={records}",
                                       "--output_file={model}/eval_results.txt"], 2,
            ["is the training run's own results"]),
    ],
    "fill_mask": [
        Row("saved_model missing", ["--saved_model={out}/none", "--text=the [MASK]"], 2,
            ["--saved_model {out}/none does not exist"]),
        Row("saved_model without the mlm encoder", ["--saved_model={model}", "--text=the [MASK]"], 2,
            ["--saved_model {model} has no encoder_mlm/<version>/saved_model.pb", "bert-export"]),
        Row("text without [MASK]", ["--saved_model={model}", "--text=the lord"], 2,
            ["--text='the lord' has no [MASK]"]),
        Row("top_k zero", ["--saved_model={model}", "--text=the [MASK]", "--top_k=0"], 2,
            ["--top_k=0 must be a positive integer"]),
    ],
    "finetune": [
        Row("directory as train file", ["--init_checkpoint={out}/none", "--train_file={dir}", "--dev_file={dir}",
                                        "--output_dir={out}/finetuned"], 2, ["{dir}"]),
        Row("learning rate nan", ["--init_checkpoint={model}", "--train_file={table}", "--dev_file={table}",
                                  "--learning_rate=nan", "--output_dir={out}/finetuned"], 2,
            ["command line: learning_rate=nan must be a finite number"]),
        Row("learning rate typo", ["--init_checkpoint={model}", "--train_file={table}", "--dev_file={table}",
                                   "--learning_rate=5e5", "--output_dir={out}/finetuned"], 2,
            ["command line: learning_rate=500000.0 must be a number in (0, 1]", "minus sign"]),
        Row("batch size 0", ["--init_checkpoint={model}", "--train_file={table}", "--dev_file={table}",
                             "--train_batch_size=0", "--output_dir={out}/finetuned"], 2,
            ["command line: train_batch_size=0 must be a positive whole number"]),
        Row("output dir not empty", ["--init_checkpoint={model}", "--train_file={table}", "--dev_file={table}",
                                     "--output_dir={model}"], 2, ["--output_dir {model} is not empty"]),
        Row("train file not UTF-8", ["--init_checkpoint={model}", "--train_file={latin1_table}",
                                     "--dev_file={table}", "--output_dir={out}/finetuned"], 2,
            ["{latin1_table} is not UTF-8 text", "save it as UTF-8"]),
        Row("output dir a FIFO", ["--init_checkpoint={model}", "--train_file={table}", "--dev_file={table}",
                                  "--output_dir={out}/fifo"], 2,
            ["{out}/fifo is a FIFO (named pipe), not a directory"]),
        Row("mistyped key in --config", ["--config={finetune_typo}", "--output_dir={out}/finetuned"], 2,
            ["finetune_typo.yaml: unknown field(s) ['learnig_rate']", "'learning_rate'"]),
        Row("--set without a value", ["--config={finetune_recipe}", "--set=learning_rate",
                                      "--output_dir={out}/finetuned"], 2,
            ["--set='learning_rate' must be FIELD=VALUE"]),
        Row("no output directory", ["--config={finetune_recipe}"], 2,
            ["No output directory: pass --output_dir=DIR or set output_dir in the --config file"]),
        Row("flag contradicting the vocab's settings", ["--init_checkpoint={cased_model}", "--train_file={table}",
                                                         "--dev_file={table}", "--do_lower_case",
                                                         "--output_dir={out}/finetuned"], 2,
            ["--do_lower_case contradicts {cased_model}/vocab.settings.json"]),
    ],
    "convert": [
        Row("input missing", ["--from=hf", "--input={out}/none", "--output={out}/converted"], 2, ["{out}/none"]),
        Row("shard outside the input", ["--from=hf", "--input={hf_escape}", "--output={out}/converted"], 2,
            ["names the shard '../../../../etc/passwd', which is not a file in --input"]),
        Row("vocab size differs from the config", ["--from=hf", "--input={hf_short_vocab}",
                                                   "--output={out}/converted"], 2,
            ["has 100 tokens but", "says vocab_size=30522", "--allow_vocab_mismatch"]),
        Row("output a FIFO", ["--from=hf", "--input={minilm}", "--output={out}/fifo"], 2,
            ["{out}/fifo is a FIFO (named pipe), not a directory"]),
        Row("HF output a character device", ["--to=hf", "--input={model}", "--output={out}/null"], 2,
            ["{out}/null is a character device, not a directory"]),
        Row("keras-hub output a socket", ["--to=keras_hub", "--input={model}", "--output={out}/socket"], 2,
            ["{out}/socket is a socket, not a directory"]),
        Row("flag contradicting the vocab's settings", ["--to=hf", "--input={cased_model}", "--output={out}/hf",
                                                         "--do_lower_case"], 2,
            ["--do_lower_case contradicts {cased_model}/vocab.settings.json"]),
    ],
}


@pytest.fixture(scope="module")
def paths(tmp_path_factory, minilm_dir):
    root = tmp_path_factory.mktemp("inputs")
    (root / "dir").mkdir()
    (root / "file").write_text("a file, not a folder\n")
    (root / "empty.txt").write_text("")
    (root / "vocab_without_mask.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\nlord\n")
    (root / "corpus.txt").write_text("The Lord is my shepherd.\nHe restores my soul.\n\nJesus wept.\n" * 20)
    # A folder that, first on PYTHONPATH, makes the optional jieba (the `chinese` extra) fail to import as if absent.
    (root / "without_jieba" / "jieba").mkdir(parents=True)
    (root / "without_jieba" / "jieba" / "__init__.py").write_text("raise ImportError('No module named jieba')\n")
    write_vocab(root / "vocab.txt")
    write_records(root / "records.tfrecord", 4, seq=16, pred=3)
    data = bytearray((root / "records.tfrecord").read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside a record's payload: its checksum no longer matches
    (root / "corrupt.tfrecord").write_bytes(bytes(data))
    write_vocab(root / "small_vocab.txt", 16)
    # Same size as the records' vocab, but [CLS] [SEP] [MASK] at 5-7 (ids 2-4 are [unused*] there) / [MASK] moved.
    tokens = vocab_tokens()
    (root / "shifted_vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[unused1]", "[unused2]", "[unused3]", "[CLS]", "[SEP]", "[MASK]"] + tokens[8:]) + "\n")
    (root / "mask_moved_vocab.txt").write_text("\n".join(tokens[:4] + [tokens[5], tokens[4]] + tokens[6:]) + "\n")
    write_records(root / "records16.tfrecord", 16, seq=16, pred=3, seed=5)
    write_records(root / "records64.tfrecord", 2, seq=64, pred=3)
    write_records(root / "empty.tfrecord", 0, seq=16, pred=3)
    packed = run_cli("create_pretraining_data", f"--input_file={root / 'corpus.txt'}", "--pack",
                     f"--output_file={root / 'packed16.tfrecord'}", f"--vocab_file={root / 'vocab.txt'}",
                     "--max_seq_length=16", "--max_predictions_per_seq=3")
    assert packed.returncode == 0, packed.stderr[-3000:]
    (root / "recipe.yaml").write_text(TINY_RECIPE.format(records=root / "records.tfrecord", vocab=root / "vocab.txt"))
    (root / "recipe_without_vocab.yaml").write_text("\n".join(
        line for line in (root / "recipe.yaml").read_text().splitlines() if not line.startswith("vocab_file:")))
    # A model directory (tiny config: 32 positions) and labelled tables for bert-export and bert-finetune.
    write_model_dir(str(root / "model"), BertPretrainer(tiny_config()), str(root / "vocab.txt"))
    # A cased vocab that keeps accents (its settings file beside it), a model directory of it, and a broken file.
    shutil.copyfile(root / "vocab.txt", root / "cased_vocab.txt")
    TokenizerSettings.of(do_lower_case=False).write_beside(str(root / "cased_vocab.txt"))
    write_model_dir(str(root / "cased_model"), BertPretrainer(tiny_config()), str(root / "cased_vocab.txt"))
    shutil.copyfile(root / "vocab.txt", root / "broken_settings_vocab.txt")
    (root / "broken_settings_vocab.settings.json").write_text('{"do_lower_case": tru')
    (root / "table.csv").write_text("text,label\nthe lord,a\njesus wept,b\n")
    (root / "latin1.csv").write_bytes("text,label\ncaf\u00e9,a\n".encode("latin-1"))
    (root / "finetune.yaml").write_text(f"init_checkpoint: {root / 'model'}\ntrain_file: {root / 'table.csv'}\n"
                                        f"dev_file: {root / 'table.csv'}\n")
    (root / "finetune_typo.yaml").write_text((root / "finetune.yaml").read_text() + "learnig_rate: 2.0e-5\n")
    # HF directories: an index whose shard lies outside the folder, and MiniLM with a vocab cut to 100 tokens.
    (root / "hf_escape").mkdir()
    (root / "hf_escape" / "config.json").write_text('{"model_type": "bert"}')
    (root / "hf_escape" / "model.safetensors.index.json").write_text(
        '{"weight_map": {"embeddings.word_embeddings.weight": "../../../../etc/passwd"}}')
    (root / "hf_short_vocab").mkdir()
    for name in ("config.json", "model.safetensors"):
        (root / "hf_short_vocab" / name).symlink_to(f"{minilm_dir}/{name}")
    with open(f"{minilm_dir}/vocab.txt", encoding="utf-8") as f:
        (root / "hf_short_vocab" / "vocab.txt").write_text("".join(f.readlines()[:100]))
    return {"without_jieba": root / "without_jieba",
            "dir": root / "dir", "file": root / "file", "corpus": root / "corpus.txt", "vocab": root / "vocab.txt",
            "cased_vocab": root / "cased_vocab.txt", "cased_vocab_settings": root / "cased_vocab.settings.json",
            "cased_model": root / "cased_model", "broken_settings_vocab": root / "broken_settings_vocab.txt",
            "broken_settings_vocab_settings": root / "broken_settings_vocab.settings.json",
            "empty": root / "empty.txt", "vocab_without_mask": root / "vocab_without_mask.txt",
            "records": root / "records.tfrecord", "corrupt_records": root / "corrupt.tfrecord",
            "small_vocab": root / "small_vocab.txt", "recipe": root / "recipe.yaml",
            "shifted_vocab": root / "shifted_vocab.txt", "mask_moved_vocab": root / "mask_moved_vocab.txt",
            "records16": root / "records16.tfrecord", "records64": root / "records64.tfrecord",
            "empty_records": root / "empty.tfrecord", "packed16": root / "packed16.tfrecord",
            "recipe_without_vocab": root / "recipe_without_vocab.yaml",
            "model": root / "model", "table": root / "table.csv", "latin1_table": root / "latin1.csv",
            "hf_escape": root / "hf_escape", "hf_short_vocab": root / "hf_short_vocab", "minilm": minilm_dir,
            "finetune_recipe": root / "finetune.yaml", "finetune_typo": root / "finetune_typo.yaml"}


# Output paths that are not regular files, made in a test's own folder (never the machine's /dev/*) when a row
# names `{out}/<name>`: (file type, device numbers): /dev/full's and /dev/null's numbers, a loop device.
NODES = {"full": (stat.S_IFCHR, (1, 7)), "null": (stat.S_IFCHR, (1, 3)), "block": (stat.S_IFBLK, (7, 0)),
         "fifo": (stat.S_IFIFO, None), "socket": (stat.S_IFSOCK, None)}


def make_node(path, node):
    """Makes the node NODES[node] at `path`; returns the path."""
    kind, numbers = NODES[node]
    if kind == stat.S_IFIFO:
        os.mkfifo(path)
    elif kind == stat.S_IFSOCK:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))  # the node stays after the socket closes
    else:
        try:
            os.mknod(path, kind | 0o666, os.makedev(*numbers))
        except PermissionError:
            pytest.skip("making a device node needs root (as in the CI container)")
    return str(path)


def make_nodes(folder, text):
    """Makes the nodes of NODES that `text` names as `{out}/<name>` in `folder`; returns {name: path}."""
    return {node: make_node(os.path.join(folder, node), node) for node in NODES if "{out}/" + node in text}


# A bert-pretrain recipe that would train (a few steps of a tiny model on `records`) but for the row's flag.
TINY_RECIPE = """
name: tiny
model: {{preset: tiny, hidden_size: 16, intermediate_size: 32, num_attention_heads: 2, num_hidden_layers: 1,
         max_position_embeddings: 16}}
vocab_file: {vocab}
train_batch_size: 2
num_train_steps: 2
num_warmup_steps: 1
iterations_per_loop: 1
save_checkpoints_steps: 1
phases: [{{name: seq16, num_steps: 2, max_seq_length: 16, max_predictions_per_seq: 3, input_file: {records}}}]
"""


# The rows of the commands that train are left out of the fast tier (`make test-fast`), and those of the Beam
# pipeline, which runs in a child process of its own (about 30 s on a loaded machine); the others are in it.
SLOW_COMMANDS = ("pretrain", "finetune", "create_pretraining_data_beam")


@pytest.mark.parametrize("command, row", [
    pytest.param(command, row, marks=pytest.mark.slow if command in SLOW_COMMANDS else ())
    for command, rows in ROWS.items() for row in rows],
    ids=lambda value: value.case.replace(" ", "_") if isinstance(value, Row) else value)
def test_bad_input_ends_in_one_line(command, row, paths, tmp_path):
    names = {**paths, "out": tmp_path}
    nodes = make_nodes(tmp_path, " ".join(row.args))
    env = {name: value.format(**names) for name, value in row.env.items()} if row.env else None
    process = run_cli(command, *(arg.format(**names) for arg in row.args), env=env)
    assert {name: stat.S_IFMT(os.lstat(path).st_mode) for name, path in nodes.items()} == {
        name: NODES[name][0] for name in nodes}, "an output node was replaced"
    program = "bert-" + command.replace("_", "-")
    lines = process.stderr.strip().splitlines()
    assert process.returncode == row.code, process.stderr[-3000:]
    assert "Traceback" not in process.stderr, process.stderr[-3000:]
    assert lines[-1].startswith(f"{program}: error: "), process.stderr[-3000:]
    assert sum(": error: " in line for line in lines) == 1, process.stderr[-3000:]
    for words in row.words:
        assert words.format(**names) in lines[-1]
    assert not list(tmp_path.rglob("ckpt-*")), "a checkpoint was written: something trained"


@pytest.mark.slow
def test_internal_error_inside_a_command_exits_1_with_the_hint(paths, tmp_path):
    # A bug inside bert-vocab (here: the learner raising a plain ValueError, as a library bug would) is exit 1 and
    # one line that says so and how to get the traceback, never exit 2 ("your input was bad").
    script = ("import sys\n"
              "from bert_tf.text import vocab_learning\n"
              "def broken(*args, **kwargs):\n"
              "    raise ValueError('shapes (3,) and (4,) do not match')\n"
              "vocab_learning.learn_vocab_from_words = broken\n"
              "from bert_tf.cli import vocab\n"
              "sys.argv = ['bert-vocab', *sys.argv[1:]]\n"
              "vocab.run()\n")
    args = [f"--input_file={paths['corpus']}", "--vocab_size=30", f"--output_file={tmp_path}/vocab.txt"]
    process = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300)
    assert process.returncode == 1, process.stderr[-3000:]
    assert process.stderr.strip().splitlines()[-1] == (
        "bert-vocab: error: internal error: ValueError: shapes (3,) and (4,) do not match (a bug: rerun with "
        "--verbosity=debug for the traceback and report it).")
    assert not (tmp_path / "vocab.txt").exists()


@pytest.mark.slow
def test_debug_verbosity_shows_the_traceback(paths, tmp_path):
    process = run_cli("vocab", f"--input_file={paths['dir']}", "--input_format=text", f"--output_file={tmp_path}/v",
                      "--verbosity=debug")
    assert process.returncode == 2
    assert "Traceback" in process.stderr and "IsADirectoryError" in process.stderr
    assert process.stderr.strip().splitlines()[-1].startswith("bert-vocab: error: ")


@pytest.mark.slow
@pytest.mark.parametrize("error, code, words", [
    (OSError(errno.ENOSPC, "No space left on device", "/data/train.tfrecord"), 2,
     "/data/train.tfrecord: No space left on device: free some space"),
    (OSError(errno.ENOSPC, "No space left on device"), 2, "No space left on device: free some space"),
    (PermissionError(errno.EACCES, "Permission denied", "/data/vocab.txt"), 2,
     "/data/vocab.txt: Permission denied: change its permissions"),
    (OSError(errno.EROFS, "Read-only file system", "/mnt/ro/run"), 2, "/mnt/ro/run: Read-only file system"),
    (InputFileNotFoundError("No labels file x.txt: pass --labels_file."), 2, "No labels file x.txt: pass"),
    (FileNotFoundError("No labels file x.txt"), 1, "internal error: FileNotFoundError"),
    (ValueError("No gradient reaches layer_0"), 1, "internal error: ValueError: No gradient reaches layer_0 (a bug: "
                                                   "rerun with --verbosity=debug"),
    (json.JSONDecodeError("Expecting value", "x", 0), 1, "internal error: JSONDecodeError"),
    (InputError("config.json is not valid JSON (Expecting value)."), 2, "config.json is not valid JSON"),
    (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), 1, "internal error: ConnectionResetError"),
    (InputError("--vocab_size=0 must be positive:\n  pass 30522."), 2, "--vocab_size=0 must be positive: pass"),
    (NonFiniteLossError("The training loss became nan at step 7"), 3, "loss became nan at step 7"),
    (ModuleNotFoundError("No module named 'apache_beam'", name="apache_beam"), 2, "pip install apache_beam"),
    (KeyError("layer_0"), 1, "internal error: KeyError: 'layer_0' (a bug: rerun with --verbosity=debug"),
    (tf.errors.ResourceExhaustedError(None, None, "/dev/full; No space left on device"), 2,
     "/dev/full; No space left on device: free some space"),
    (tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with shape[4096,30522]"), 1,
     "internal error: ResourceExhaustedError"),
    (tf.errors.FailedPreconditionError(None, None, "/data; Is a directory"), 2, "/data; Is a directory: pass a file"),
    (tf.errors.InvalidArgumentError(None, None, "{{function_node __wrapped__IteratorGetNext_device_/CPU:0}} "
                                                "InputError: --x is bad: pass y\nTraceback ...\n [[{{node PyFunc}}]]"),
     2, "--x is bad: pass y"),
])
def test_classify(error, code, words):
    got_code, message = exit_codes.classify(error)
    assert (got_code, "\n" in message) == (code, False)
    assert words in message


def _write_config_into(folder):
    write_config(str(folder), tiny_config())


def _split_bible_into(folder):
    write_bible_split(str(folder))


# Writers without a command of their own, called as the commands call them: (case, writer of a folder, the node
# in that folder, words of the one line). Each leaves the node as it was.
LIBRARY_ROWS = [
    ("model-dir text file a FIFO", _write_config_into, "bert_config.json", "fifo", ["bert_config.json is a FIFO"]),
    ("model-dir text file full", _write_config_into, "bert_config.json", "full", ["bert_config.json", "ENOSPC"]),
    ("model dir a socket", lambda folder: write_model_dir(str(folder / "socket"), BertPretrainer(tiny_config())),
     None, "socket", ["socket is a socket, not a directory"]),
    ("Bible split file a FIFO", _split_bible_into, "heldout.txt", "fifo", ["heldout.txt is a FIFO"]),
    ("Bible split file full", _split_bible_into, "train.txt", "full", ["train.txt", "ENOSPC"]),
    ("Bible split folder a block device", lambda folder: write_bible_split(str(folder / "block")), None, "block",
     ["block is a block device, not a directory"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("case, writer, name, node, words", LIBRARY_ROWS, ids=[row[0] for row in LIBRARY_ROWS])
def test_writer_refuses_a_node_in_one_line(case, writer, name, node, words, tmp_path):
    path = make_node(tmp_path / (name or node), node)  # named as the file the writer writes, or as a folder
    with pytest.raises(Exception) as raised:
        writer(tmp_path)
    code, message = exit_codes.classify(raised.value)
    assert code == 2 and all(word in message for word in words), message
    assert stat.S_IFMT(os.lstat(path).st_mode) == NODES[node][0], "the node was replaced"


@pytest.mark.slow
def test_output_to_a_null_device_is_written_through(paths, tmp_path):
    nodes = make_nodes(tmp_path, "{out}/null")
    process = run_cli("create_pretraining_data", f"--input_file={paths['corpus']}", f"--output_file={nodes['null']}",
                      f"--vocab_file={paths['vocab']}", "--dupe_factor=1")
    assert process.returncode == 0, process.stderr[-3000:]
    assert "wrote" in process.stdout and stat.S_ISCHR(os.lstat(nodes["null"]).st_mode)
    assert os.listdir(tmp_path) == ["null"]  # nothing left beside it
    write_vocab_file(["[PAD]", "[UNK]"], nodes["null"])
    assert stat.S_ISCHR(os.lstat(nodes["null"]).st_mode)

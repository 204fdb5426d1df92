"""HF BERT safetensors (`config.json` + `model.safetensors`) -> this package's checkpoint directory.

Weights are read with the safetensors NumPy loader; pickled PyTorch files (`pytorch_model.bin`) are refused,
because unpickling runs code from the file. HF's "gelu" is the exact erf form and stays "gelu"; "gelu_new" (the
tanh approximation) becomes "gelu_tanh". Encoder-only files (`BertModel`, e.g. sentence encoders) leave the
pre-training heads freshly initialized and are written without them.
"""

import contextlib
import json
import os

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy, so the NumPy loader reads bf16 files)
import numpy as np
from safetensors import safe_open

from bert_tf.config import BertConfig
from bert_tf.conversion import hf_names, rename_table
from bert_tf.errors import InputError, InputFileNotFoundError
from bert_tf.modeling.pretrainer import BertPretrainer
from bert_tf.text.tokenizer_settings import TokenizerSettings, json_object

WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
PICKLED = ("pytorch_model.bin", "pytorch_model.bin.index.json")


def read_hf_config(path):
    """A `BertConfig` from an HF BERT `config.json`; non-BERT models and BERT variants the original lacks are
    refused with the reason."""
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except OSError as e:
        raise InputFileNotFoundError(
            f"Cannot read {path} ({e.strerror}): an HF model directory has a config.json.") from e
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not valid JSON ({e}).") from e
    model_type = values.get("model_type")
    if model_type != "bert":
        raise InputError(f"{path} has model_type={model_type!r}: bert-convert --from hf reads BERT models only "
                         "(model_type 'bert').")
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise InputError(f"{path} has position_embedding_type={position_type!r}: only 'absolute' (learned "
                         "positions, as in the original) converts.")
    if values.get("is_decoder") or values.get("add_cross_attention"):
        raise InputError(f"{path} describes a BERT decoder (is_decoder/add_cross_attention): only encoders convert.")
    act = values.get("hidden_act", "gelu")
    if act not in hf_names.ACTIVATIONS:
        raise InputError(f"{path} has hidden_act={act!r}, which has no BertConfig equivalent: supported are "
                         f"{', '.join(hf_names.ACTIVATIONS)}.")
    fields = {k: values[k] for k in hf_names.CONFIG_FIELDS if k in values}
    return BertConfig(hidden_act=hf_names.ACTIVATIONS[act], **fields)


def read_hf_tokenizer_settings(input_dir):
    """The tokenizer settings of an HF model directory's `tokenizer_config.json` (`do_lower_case`, default true;
    `strip_accents`, default: as `do_lower_case`, as HF's `BertTokenizer` reads them), or None without one.

    Example:
    >>> read_hf_tokenizer_settings("all-MiniLM-L6-v2")  # doctest: +SKIP
    TokenizerSettings(do_lower_case=True, strip_accents=True)
    """
    path = os.path.join(input_dir, hf_names.TOKENIZER_CONFIG)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        values = json_object(f.read(), path, "pass an HF model directory whose tokenizer config loads")
    return TokenizerSettings.from_mapping(values, path)


def weight_files(input_dir):
    """The safetensors file(s) of an HF model directory (one file, or the shards its index lists); a shard name
    that leads outside `input_dir` (an absolute path, "..") is refused, so a crafted index cannot open other files."""
    index = os.path.join(input_dir, WEIGHTS_INDEX)
    if os.path.exists(index):
        try:
            with open(index, encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
        except (json.JSONDecodeError, KeyError, AttributeError, TypeError) as e:
            raise InputError(f"{index} is not a safetensors index ({e}): it must be JSON with a weight_map of "
                             f"weight name -> shard file name.") from None
        root = os.path.realpath(input_dir)
        paths = []
        for shard in shards:
            path = os.path.realpath(os.path.join(root, str(shard)))
            if os.path.dirname(path) != root:
                raise InputError(f"{index} names the shard {shard!r}, which is not a file in --input {input_dir}: "
                                 f"shards must be file names inside the model directory.")
            paths.append(path)
        return paths
    single = os.path.join(input_dir, WEIGHTS)
    if os.path.exists(single):
        return [single]
    pickled = [name for name in PICKLED if os.path.exists(os.path.join(input_dir, name))]
    if pickled:
        raise InputError(f"{input_dir} has {pickled[0]}, a pickled PyTorch file, which bert-convert never loads "
                         "(unpickling runs code from the file): save the model as safetensors first "
                         "(`model.save_pretrained(dir, safe_serialization=True)`).")
    raise InputFileNotFoundError(f"No {WEIGHTS} in {input_dir}: pass an HF BERT directory with safetensors weights.")


def canonical_name(name):
    """An HF weight name without the task model's "bert." prefix and with LayerNorm gamma/beta as weight/bias."""
    if name.startswith(hf_names.PREFIX):
        name = name[len(hf_names.PREFIX):]
    for old, new in hf_names.SUFFIX_ALIASES:
        if name.endswith(old):
            name = name[:-len(old)] + new
    return name


def convert_hf(input_dir, output_dir, allow_vocab_mismatch=False):
    """Converts an HF BERT model directory (`config.json`, `model.safetensors`, `vocab.txt`) to a model directory
    that `load_encoder` / `load_pretrainer` read.

    Args:
        input_dir: an HF BERT directory with safetensors weights.
        output_dir: where the converted `bert_config.json`, `vocab.txt` and `ckpt-0` go (must hold no checkpoint).
        allow_vocab_mismatch: accept a vocab.txt whose size differs from the config's vocab_size.

    Returns:
        A `Conversion` summary (its `fresh` lists what the file lacked, e.g. the heads of a `BertModel`).

    Example:
        print(convert_hf("all-MiniLM-L6-v2", "converted/minilm"))
        encoder = bert_tf.load_encoder("converted/minilm")
    """
    if not os.path.isdir(input_dir):
        raise InputFileNotFoundError(f"--input {input_dir} is not a directory: pass an HF BERT model directory.")
    config_file = os.path.join(input_dir, "config.json")
    config = read_hf_config(config_file)
    files = weight_files(input_dir)
    rename_table.check_output_dir(output_dir)
    with contextlib.ExitStack() as stack:
        location = {}
        for path in files:
            handle = stack.enter_context(safe_open(path, framework="numpy"))
            for name in handle.keys():
                key = canonical_name(name)
                if key in location:
                    raise InputError(f"{path}: {name} and another weight both map to {key}: the file mixes layouts.")
                location[key] = (handle, name)

        def read(key):
            handle, name = location[key]
            return handle.get_tensor(name)

        ignored = [key for key in location if key in hf_names.IGNORED]
        for tied, target in hf_names.TIED.items():
            if tied not in location:
                continue
            ignored.append(tied)
            if target not in location:  # Only the tied copy was saved: it is the value.
                location[target] = location[tied]
            elif not np.array_equal(read(tied), read(target)):
                raise InputError(f"{input_dir}: {tied} differs from {target}; an untied masked-LM decoder has no "
                                 "place in BERT's tied head.")
        names = [key for key in location if key not in ignored]
        model = BertPretrainer(config)
        fresh = rename_table.load_weights(model, names, read,
                                        rename_table.expand(hf_names.TABLE, config.num_hidden_layers),
                                        ", ".join(files), optional=hf_names.OPTIONAL)
    heads = any(name in names for name, _, _ in hf_names.HEADS)
    vocab_file = rename_table.optional_file(input_dir, "vocab.txt")
    settings = read_hf_tokenizer_settings(input_dir) if vocab_file else None
    path = rename_table.write(output_dir, model, vocab_file, config_file, heads=heads,
                              allow_vocab_mismatch=allow_vocab_mismatch, settings=settings)
    return rename_table.Conversion(source=", ".join(files), checkpoint=path, config=config, converted=len(names),
                                 ignored=len(ignored), fresh=fresh, vocab_file=vocab_file)

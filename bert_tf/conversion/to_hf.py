"""This package's model directory -> an HF `BertForPreTraining` folder (`config.json`, `model.safetensors`,
`vocab.txt`), which `transformers` loads as it loads Google's BERT: the same rename table as `from_hf`, read the
other way."""

import json
import os
import shutil

import numpy as np
import tensorflow as tf
from safetensors.numpy import save_file

from bert_tf.atomic_output import check_output_directory, directory_written_atomically
from bert_tf.conversion import hf_names
from bert_tf.errors import InputError
from bert_tf.model_dir import load_pretrainer, read_config, tokenizer_settings, vocab_path

# BertConfig.hidden_act -> HF `hidden_act`. HF's "gelu" is the exact erf form; "gelu_new" is the original's tanh
# approximation, written as the original writes it.
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu", "tanh": "tanh", "linear": "linear"}


def hf_config(config, settings):
    """The HF `config.json` values of a `BertConfig`; options HF's BERT cannot express are refused."""
    if config.pre_layer_norm:
        raise InputError("The model uses pre_layer_norm=True, which HF's BERT cannot express (its blocks are post-LN "
                         "as the original's): export it with bert-export instead.")
    if config.position_embedding_type != "learned":
        raise InputError(f"The model uses position_embedding_type={config.position_embedding_type!r}; HF's BERT has "
                         f"learned positions only: export it with bert-export instead.")
    fields = {name: getattr(config, name) for name in hf_names.CONFIG_FIELDS}
    return {"architectures": ["BertForPreTraining"], "model_type": "bert", **fields,
            "hidden_act": HF_ACTIVATIONS[config.hidden_act], "position_embedding_type": "absolute",
            "pad_token_id": 0, "tie_word_embeddings": True, "do_lower_case": settings.do_lower_case}


def hf_weights(pretrainer):
    """{HF BertForPreTraining weight name: numpy array} of a `BertPretrainer` (the tied decoder is left to HF)."""
    variables = {v.path: v for v in pretrainer.weights}
    weights = {}
    for name, path, transpose in hf_names.TABLE:
        for i in range(pretrainer.config.num_hidden_layers) if "{i}" in name else (0,):
            value = np.asarray(variables[path.format(i=i)].numpy(), np.float32)
            key = name.format(i=i)
            key = key if key.startswith("cls.") else hf_names.PREFIX + key
            weights[key] = np.ascontiguousarray(value.T if transpose else value)
    return weights


def export_hf(model_dir, output_dir, settings=None):
    """Writes an HF `BertForPreTraining` folder from a model directory (written by `bert-convert` or
    `bert-pretrain`): `config.json` (hidden_act "gelu_new" for the original's tanh GELU, "gelu" for the exact
    one), `model.safetensors` (the encoder and both pre-training heads), `vocab.txt` and `tokenizer_config.json`
    with the tokenizer `settings` (`do_lower_case`, `strip_accents`; default: the model directory's own,
    `model_dir.tokenizer_settings`).

    Example:
    >>> export_hf("converted/minilm", "hf/minilm")  # doctest: +SKIP
    'hf/minilm'
    >>> transformers.BertForPreTraining.from_pretrained("hf/minilm")  # doctest: +SKIP
    """
    config = read_config(model_dir)
    settings = settings or tokenizer_settings(model_dir)
    values = hf_config(config, settings)
    check_output_directory(output_dir)
    if tf.io.gfile.exists(output_dir) and tf.io.gfile.listdir(output_dir):
        raise InputError(f"--output {output_dir} is not empty: pass a new directory.")
    weights = hf_weights(load_pretrainer(model_dir))
    with directory_written_atomically(output_dir) as partial:  # replaces an empty output_dir
        with open(os.path.join(partial, "config.json"), "w", encoding="utf-8") as f:
            json.dump(values, f, indent=2)
        save_file(weights, os.path.join(partial, "model.safetensors"), metadata={"format": "pt"})
        vocab = vocab_path(model_dir)
        if vocab:
            shutil.copyfile(vocab, os.path.join(partial, "vocab.txt"))
            with open(os.path.join(partial, hf_names.TOKENIZER_CONFIG), "w", encoding="utf-8") as f:
                json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": settings.do_lower_case,
                           "strip_accents": settings.strip_accents,
                           "model_max_length": config.max_position_embeddings}, f, indent=2)
    return output_dir

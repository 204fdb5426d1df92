"""Writes tests/fixtures/hf_tiny_pretraining/ (an HF BertForPreTraining directory: config.json, model.safetensors,
vocab.txt) and tests/fixtures/hf_tiny_pretraining_reference.npz (its outputs), for tests/test_convert_hf.py.

The MiniLM encoder has no pre-training heads; this tiny random model has them (`cls.predictions.*` with the
decoder tied to the word embeddings, `cls.seq_relationship.*`, names under "bert."), and uses "gelu_new", so the
heads' rename rows and the gelu_new -> gelu_tanh mapping are checked against the reference implementation.
Weights are drawn with stddev 0.2 (not 0.02) and non-trivial biases and LayerNorm parameters, so a wrong
transpose or a swapped parameter changes the outputs visibly.

Run with the reference venv (torch + transformers; offline):
    HF_HUB_OFFLINE=1 /work/refvenv/bin/python tools/make_hf_pretraining_fixture.py
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import BertConfig, BertForPreTraining  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_DIR = os.path.join(ROOT, "tests", "fixtures", "hf_tiny_pretraining")
OUTPUT = os.path.join(ROOT, "tests", "fixtures", "hf_tiny_pretraining_reference.npz")
VOCAB_SIZE = 64


def main():
    torch.manual_seed(1234)
    config = BertConfig(vocab_size=VOCAB_SIZE, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, hidden_act="gelu_new", max_position_embeddings=32,
                        type_vocab_size=2, layer_norm_eps=1e-12)
    model = BertForPreTraining(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn_like(param) * 0.2
            param.copy_(noise + 1.0 if "LayerNorm.weight" in name else noise)
    os.makedirs(MODEL_DIR, exist_ok=True)
    model.save_pretrained(MODEL_DIR, safe_serialization=True)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"w{i}" for i in range(VOCAB_SIZE - len(tokens))]
    with open(os.path.join(MODEL_DIR, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")

    generator = np.random.default_rng(5)
    lengths = [12, 7, 3]
    ids = np.zeros((3, 12), np.int32)
    mask = np.zeros((3, 12), np.int32)
    types = np.zeros((3, 12), np.int32)
    for row, length in enumerate(lengths):
        ids[row, :length] = generator.integers(5, VOCAB_SIZE, length)
        mask[row, :length] = 1
        types[row, length // 2:length] = 1
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids, dtype=torch.long), attention_mask=torch.tensor(mask),
                    token_type_ids=torch.tensor(types, dtype=torch.long), output_hidden_states=True)
        pooled = model.bert.pooler(out.hidden_states[-1])
    np.savez_compressed(
        OUTPUT, input_ids=ids, attention_mask=mask, token_type_ids=types,
        sequence_output=out.hidden_states[-1].numpy(), pooled_output=pooled.numpy(),
        prediction_logits=out.prediction_logits.numpy(), seq_relationship_logits=out.seq_relationship_logits.numpy())
    print(f"wrote {MODEL_DIR} ({sorted(os.listdir(MODEL_DIR))}) and {OUTPUT} ({os.path.getsize(OUTPUT)} bytes)")


if __name__ == "__main__":
    main()

"""Hugging Face's BERT pre-training step beside ours: `transformers`' `BertForPreTraining` at a preset of this package
(configs/model/<preset>.json), timed as users run it. Needs torch and transformers only, never TensorFlow.

    python3 -m bench.bench_hf_bert --preset=large --seq=512 --batch=256 --micro_batch=64 --device=cuda
    python3 -m bench.bench_hf_bert --preset=large --seq=128 --micro_batch=256 --device=cuda --compile
    python3 -m bench.bench_hf_bert --matmul --device=cuda          # the card's bf16 matmul rate, one row

Run from the repository's root as the other benchmarks are; bert_tf need not be installed (its FLOP count is pure
Python and imported from the checkout).

The step as Hugging Face's users get it: float32 weights under bf16 autocast, `attn_implementation="sdpa"`,
`torch.optim.AdamW(fused=True)` (fused on CUDA only), the global batch in micro-batches with gradient accumulation,
the gradient's global norm clipped at 1.0 (as the original BERT and this package), and the masked-LM head on every
position (BertForPreTraining's loss takes labels per position, -100 where nothing is predicted): `head_flops_share`
says how much more work that is than the head on the predicted positions only. MFU uses the package's FLOP count
(`bert_tf/accelerators/flops.py`: the head on the predicted positions) against 989.4 TFLOP/s, as our rows do.
`--compile` runs the model under `torch.compile` (its compile time is reported and not timed). A result line goes to
`--results` (default bench/results/bench_hf_bert/): `harness.step_row`'s fields, versions, steps and counts.
"""

import argparse
import json
import os
import sys
import time
import types

from bench import harness
from bert_tf.accelerators.flops import training_flops_per_sequence  # pure Python: no TensorFlow

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODEL_CONFIGS = os.path.join(REPOSITORY, "configs", "model")
# BertConfig fields Hugging Face's config shares with the original bert_config.json (the package's presets).
HF_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
             "initializer_range")
FIRST_TOKEN_ID = 999  # as bench/synthetic_batch.py: above the special and unused ids


def preset_config(preset):
    """The package's preset (configs/model/<preset>.json) as a dict of the original's fields."""
    with open(os.path.join(MODEL_CONFIGS, f"{preset}.json"), encoding="utf-8") as f:
        return json.load(f)


def build_model(preset, device="cpu"):
    """`BertForPreTraining` of the preset, float32, with PyTorch's scaled-dot-product attention, on `device`.
    Hugging Face's BERT computes GELU exactly (erf), its published configs' "gelu"; the package's presets use the
    original's tanh approximation: one element-wise kernel either way."""
    import torch
    import transformers

    fields = preset_config(preset)
    config = transformers.BertConfig(**{k: fields[k] for k in HF_FIELDS}, hidden_act="gelu",
                                     layer_norm_eps=fields.get("layer_norm_eps", 1e-12),
                                     attn_implementation="sdpa")
    model = transformers.BertForPreTraining(config).to(device=device, dtype=torch.float32)
    return model, config


def parameter_count(model):
    """Trainable parameters, each counted once (the masked-LM decoder is tied to the word embeddings)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def synthetic_batch(vocab_size, batch, seq, preds, device, seed=0):
    """BertForPreTraining's inputs for `batch` sequences: random ids, no padding, `preds` predicted positions per
    sequence (labels -100 elsewhere), random next-sentence labels."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(FIRST_TOKEN_ID, vocab_size, (batch, seq), generator=generator)
    ids[:, 0], ids[:, -1] = 101, 102
    types_ = torch.zeros(batch, seq, dtype=torch.long)
    types_[:, seq // 2:] = 1
    labels = torch.full((batch, seq), -100, dtype=torch.long)
    positions = torch.stack([torch.randperm(seq - 2, generator=generator)[:preds] + 1 for _ in range(batch)])
    labels.scatter_(1, positions, torch.randint(FIRST_TOKEN_ID, vocab_size, (batch, preds), generator=generator))
    batch_ = {"input_ids": ids, "token_type_ids": types_, "attention_mask": torch.ones(batch, seq, dtype=torch.long),
              "labels": labels, "next_sentence_label": torch.randint(0, 2, (batch,), generator=generator)}
    return {k: v.to(device) for k, v in batch_.items()}


def flops_per_sequence(fields, seq, preds, head_positions=None):
    """The package's model FLOPs per training sequence; with `head_positions`, the masked-LM head computed at that
    many positions instead of `preds` (Hugging Face's head runs at every position)."""
    config = types.SimpleNamespace(**fields)
    return training_flops_per_sequence(config, seq, preds if head_positions is None else head_positions)


def make_step(model, optimizer, micro_batches, device):
    """One optimizer step over the micro-batches (gradients accumulated, mean loss), under bf16 autocast."""
    import torch

    scale = 1.0 / len(micro_batches)

    def step():
        total = 0.0
        for micro in micro_batches:
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                loss = model(**micro).loss * scale
            loss.backward()
            total = total + loss.detach()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return total

    return step


def synchronize(device):
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def device_name(device):
    import torch

    return torch.cuda.get_device_name() if device == "cuda" else "cpu"


def measure_step(preset, seq, batch, micro_batch, preds, device, warmup, steps, compile_model=False):
    """Builds, warms up and times the step; returns the figures (a dict)."""
    import torch
    import transformers

    torch.manual_seed(0)
    model, config = build_model(preset, device)
    model.train()
    fused = device == "cuda"  # PyTorch's fused AdamW kernel is CUDA's
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=fused)
    runner = torch.compile(model) if compile_model else model
    full = synthetic_batch(config.vocab_size, batch, seq, preds, device)
    micro_batches = [{k: v[i:i + micro_batch] for k, v in full.items()} for i in range(0, batch, micro_batch)]
    step = make_step(runner, optimizer, micro_batches, device)
    started = time.perf_counter()
    for _ in range(warmup):  # the first also compiles (torch.compile) and autotunes
        loss = step()
    synchronize(device)
    warmup_s = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(steps):
        loss = step()
    synchronize(device)
    step_s = (time.perf_counter() - started) / steps
    fields = preset_config(preset)
    return {"device": device_name(device), "step_s": step_s, "warmup_s": warmup_s, "loss": float(loss.item()),
            "parameter_count": parameter_count(model), "fused_adamw": fused,
            "flops_per_sequence": flops_per_sequence(fields, seq, preds),
            "head_flops_share": flops_per_sequence(fields, seq, preds, head_positions=seq)
            / flops_per_sequence(fields, seq, preds) - 1.0,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "peak_bytes": torch.cuda.max_memory_allocated() if device == "cuda" else None}


def matmul_tflops(device, size=8192, repeats=20):
    """The device's bf16 rate on one large square matrix product (TFLOP/s), the ceiling a step's matmuls read
    against."""
    import torch

    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    synchronize(device)
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize(device)
    return 2 * size ** 3 * repeats / (time.perf_counter() - started) / 1e12


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="base", help="configs/model/<preset>.json: tiny, base, large, ...")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=256, help="Global batch: sequences per optimizer step.")
    parser.add_argument("--micro_batch", type=int, default=None, help="Sequences per forward/backward (default: all).")
    parser.add_argument("--preds", type=int, default=None,
                        help="Predicted positions per sequence (default: the paper recipes' 20 at 128, 80 at 512).")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--warmup", type=int, default=3, help="Untimed steps first (compile, autotuning).")
    parser.add_argument("--steps", type=int, default=10, help="Timed steps.")
    parser.add_argument("--compile", action="store_true", help="Run the model under torch.compile.")
    parser.add_argument("--matmul", action="store_true", help="Measure the bf16 matmul rate only.")
    parser.add_argument("--matmul_size", type=int, default=8192)
    parser.add_argument("--run_id", default=None, help="The row's run_id (default: the start time).")
    parser.add_argument("--results", default=os.path.join(harness.RESULTS, "bench_hf_bert"))
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    run_id = args.run_id or harness.new_run_id()
    if args.matmul:
        tflops = matmul_tflops(args.device, args.matmul_size)
        row = harness.append_row(args.results, {
            "stack": "torch", "variant": f"matmul_bf16_{args.matmul_size}", "device": device_name(args.device),
            "matmul_tflops": round(tflops, 2), "run_id": run_id}, file_name="matmul.jsonl")
        print(f"bf16 matmul {args.matmul_size}^3 on {row['device']}: {tflops:.1f} TFLOP/s", flush=True)
        return 0
    micro = args.micro_batch or args.batch
    if args.batch % micro:
        print(f"--batch={args.batch} is not a multiple of --micro_batch={micro}: give a divisor.", file=sys.stderr)
        return 2
    preds = args.preds or {128: 20, 512: 80}.get(args.seq, max(1, round(0.15 * args.seq)))
    figures = measure_step(args.preset, args.seq, args.batch, micro, preds, args.device, args.warmup, args.steps,
                           compile_model=args.compile)
    row = harness.step_row("transformers", "sdpa_compiled" if args.compile else "sdpa", figures["device"],
                               args.preset, args.seq, args.batch, micro, args.batch / figures["step_s"],
                               figures["flops_per_sequence"], run_id)
    row.update({k: figures[k] for k in ("parameter_count", "fused_adamw", "torch", "transformers", "peak_bytes")},
               preds=preds, warmup_steps=args.warmup, timed_steps=args.steps, step_ms=round(figures["step_s"] * 1e3, 3),
               warmup_s=round(figures["warmup_s"], 2), loss=round(figures["loss"], 4), mlm_head_positions=args.seq,
               head_flops_share=round(figures["head_flops_share"], 4))
    harness.append_row(args.results, row)
    print(f"transformers {row['transformers']} BertForPreTraining {args.preset} ({row['variant']}), torch "
          f"{row['torch']}, on {row['device']}: {args.batch}x{args.seq} in micro-batches of {micro}, "
          f"{row['step_ms']:.1f} ms/step ({args.steps} timed after {args.warmup}), {row['sequences_per_s']} "
          f"sequences/s, MFU {row['mfu']:.1%} (the package's FLOP count; the head at all {args.seq} positions is "
          f"{row['head_flops_share']:.1%} more work), {row['parameter_count']:,} parameters", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

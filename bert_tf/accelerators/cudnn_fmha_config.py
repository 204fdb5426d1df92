"""XLA:GPU's cuDNN flash attention custom calls, as data: the call targets and the `cudnn_fmha_backend_config` JSON
each call carries, written as jax 0.11.2 writes them (`jax/_src/cudnn/fused_attention_stablehlo.py`,
`create_dot_product_attention_backend_config`) for Q, K, V laid out [B, N, T, H] with a padding mask from sequence
lengths, no bias, no dropout. Pure Python (no TensorFlow), so a jax-only test compares it with jax's own.

XLA's forward call takes (Q, K, V, q_seqlen s32[B], kv_seqlen s32[B]) and returns (O [B, N, T, H], softmax
statistics f32[B, N, T], u8[0] workspace); the backward call takes (Q, K, V, statistics, dO, O, q_seqlen, kv_seqlen)
and returns (dQ, dK, dV, u8[0] workspace).

Example:
>>> config = backend_config(batch=2, heads=16, seq=128, dtype="bfloat16", scale=0.125, backward=False)
>>> config["cudnn_fmha_backend_config"]["mask_type"], sorted(config["cudnn_fmha_backend_config"])[:2]
('PADDING', ['algorithm', 'bmm1_dot_dimension_numbers'])
"""

FORWARD_TARGET = "__cudnn$fmhaSoftmax"
BACKWARD_TARGET = "__cudnn$fmhaSoftmaxBackward"
ELEMENT_TYPES = {"bfloat16": "BF16", "float16": "F16"}  # cuDNN's flash attention computes in 16 bits only
# jax's default seed: with no dropout cuDNN draws nothing from it, but the config names one.
UNUSED_SEED = 42
# (lhs contracting, rhs contracting), (lhs batch, rhs batch) of the two forward and four backward products, for
# [B, N, T, H] operands (jax's BNTH rows): BMM1 Q.K -> P, BMM2 P.V -> O, then dK, dQ, dV and dP.
FORWARD_DOTS = {"bmm1_dot_dimension_numbers": ((3, 3), ((0, 1), (0, 1))),
                "bmm2_dot_dimension_numbers": ((3, 2), ((0, 1), (0, 1)))}
BACKWARD_DOTS = {"bmm1_grad_gemm1_dot_dimension_numbers": ((2, 2), ((0, 1), (0, 1))),
                 "bmm1_grad_gemm2_dot_dimension_numbers": ((3, 2), ((0, 1), (0, 1))),
                 "bmm2_grad_gemm1_dot_dimension_numbers": ((2, 2), ((0, 1), (0, 1))),
                 "bmm2_grad_gemm2_dot_dimension_numbers": ((3, 3), ((0, 1), (0, 1)))}


def element_type(dtype):
    """XLA's name of a 16-bit compute dtype ("BF16", "F16"); a ValueError for any other."""
    if dtype not in ELEMENT_TYPES:
        raise ValueError(f"cuDNN flash attention computes in bfloat16 or float16, not {dtype}: use the "
                         f"mixed_bfloat16 (or mixed_float16) precision policy.")
    return ELEMENT_TYPES[dtype]


def _dot_numbers(dims):
    (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dims
    return {"lhs_contracting_dimensions": [str(lhs_contracting)], "rhs_contracting_dimensions": [str(rhs_contracting)],
            "lhs_batch_dimensions": [str(i) for i in lhs_batch], "rhs_batch_dimensions": [str(i) for i in rhs_batch]}


def backend_config(batch, heads, seq, dtype, scale, backward):
    """The backend config (a dict; `json.dumps` it for the call) of the forward or backward call for self-attention
    over `seq` tokens: Q, K, V [batch, heads, seq, head size] in `dtype`, logits scaled by `scale`."""
    config = {
        "algorithm": {"algo_id": "0", "math_type": "TENSOR_OP_MATH", "tuning_knobs": {"17": "1", "24": "0"},
                      "is_cudnn_frontend": True, "workspace_size": "0"},
        "fmha_scale": scale,
        "intermediate_tensor_shape": {
            "element_type": element_type(dtype),
            "dimensions": [str(batch), str(heads), str(seq), str(seq)],
            "tuple_shapes": [],
            "layout": {"dim_level_types": [], "dim_unique": [], "dim_ordered": [],
                       "minor_to_major": ["3", "2", "1", "0"], "tiles": [], "element_size_in_bits": "0",
                       "memory_space": "0", "index_primitive_type": "PRIMITIVE_TYPE_INVALID",
                       "pointer_primitive_type": "PRIMITIVE_TYPE_INVALID",
                       "dynamic_shape_metadata_prefix_bytes": "0"},
            "is_dynamic_dimension": [False, False, False, False],
        },
        "is_flash_attention": True,
        "mask_type": "PADDING",
    }
    config.update({key: _dot_numbers(dims) for key, dims in (BACKWARD_DOTS if backward else FORWARD_DOTS).items()})
    config.update(dropout_rate=0.0, seed=UNUSED_SEED, sliding_window_length=0, max_seg_per_batch=1,
                  is_paged_attention=False)
    return {"operation_queue_id": "0", "cudnn_fmha_backend_config": config}

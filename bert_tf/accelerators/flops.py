"""Model FLOPs per trained sequence, for the model FLOPs utilisation (MFU) of a run. Pure Python: the GPU proxy
benchmark uses it under JAX, where TensorFlow is not installed.

The convention (the usual "6 x parameters x tokens" of Kaplan et al. / PaLM, made exact for BERT):
- A multiply-add is 2 FLOPs; a training step costs 3x the forward pass (forward, and backward for activations and
  for weights), so each weight matrix used on each token costs 6 x its size.
- Dense layers of the encoder, per layer 4H^2 (query, key, value, attention output) + 2HI (feed-forward), on all
  T tokens of the padded sequence (padding is computed, so it counts): 6 * L * (4H^2 + 2HI) * T.
- Attention scores and the weighted sum of values: 2 matmuls of T x T x H per layer: 12 * L * T^2 * H.
- Masked-LM head only at the P predicted positions (the original gathers them first): 6 * P * (H^2 + H * V).
- Pooler and NSP classifier on the [CLS] vector: 6 * (H^2 + 2H).
- Not counted: embedding lookups (gathers), biases, LayerNorm, softmax, GELU, dropout and the optimizer update
  (all elementwise, small next to the matmuls).
MFU = model FLOPs per second / peak FLOPs per second of the hardware. The peak is `--peak_tflops` when given, else
the accelerator's data-sheet peak times the replicas, or on CPUs a measured one (`bert_tf.accelerators.peak_flops`).
"""


def training_flops_per_sequence(config, seq_length, num_predictions, use_next_sentence=True):
    """Model FLOPs of one training step on one sequence (see the module docstring for what is counted).

    Example:
    >>> round(training_flops_per_sequence(BertConfig.preset("base"), 128, 20) / 1e9, 1)  # GFLOPs
    69.9
    """
    h, layers, inter, vocab = (config.hidden_size, config.num_hidden_layers, config.intermediate_size,
                               config.vocab_size)
    dense = 6 * layers * (4 * h * h + 2 * h * inter) * seq_length
    attention = 12 * layers * seq_length * seq_length * h
    masked_lm = 6 * num_predictions * (h * h + h * vocab)
    pooler_nsp = 6 * (h * h + 2 * h) if use_next_sentence else 0
    return float(dense + attention + masked_lm + pooler_nsp)

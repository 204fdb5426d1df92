"""The original's `exclude_from_weight_decay` default, in a module without Keras so that recipes load without it."""

# Regexes searched in the variable's full name.
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")

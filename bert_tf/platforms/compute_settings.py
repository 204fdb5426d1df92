"""How a step may be computed: the mixed-precision policies and the scopes XLA may compile, which a recipe sets and
a platform chooses among (both `training/recipe.py` and the platforms file check against these)."""

MIXED_PRECISION = ("float32", "mixed_bfloat16", "mixed_float16")
# What `jit_compile: true` compiles: each replica's forward and backward pass, or its whole step (the all-reduce and
# the optimizer's update too, as Model Garden compiles the step on GPUs); see `Trainer`.
JIT_COMPILE_SCOPES = ("gradients", "step")

"""Offline analysis of the compiled training program: lowering the run's multi-step loop to XLA HLO without running
it (`compiled_program`: host transfers, dynamic shapes, dot dtypes and FLOPs) and the memory one sequence needs
from XLA's buffer assignment (`memory_estimate`, behind `tools/xla/plan_platforms.py cpu`). It assembles the run from
`bert_tf.training`, so it sits above it."""

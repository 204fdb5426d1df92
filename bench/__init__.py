"""The benchmarks, run from the repository's root as modules: `.venv/bin/python -m bench.bench_train_step`.
What they share is in `bench.harness`; their raw results go to `bench/results/<script>/`.

The exported-step scripts also run by path, on a machine that has only jax (`python3 bench/run_xla_step.py DIR`,
`python3 bench/xla_step_set.py run`), so they and the modules they read (`xla_step_format`, `synthetic_batch`,
`stablehlo_program`) import their neighbours by name and nothing from this package.
"""

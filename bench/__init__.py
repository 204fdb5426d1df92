"""The benchmarks, run from the repository's root as modules: `.venv/bin/python -m bench.bench_train_step`.

`bench/export_xla_step.py` and `bench/run_xla_step.py` are also run by path, the runner on a machine that has only
jax (`python3 bench/run_xla_step.py DIR`), so they and the modules they read import their neighbours by name.
"""

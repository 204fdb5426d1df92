"""The benchmarks against a peer, run from the repository's root as modules: `.venv/bin/python -m
bench.bench_train_step`. What they share is in `bench.harness` (and `bench.run_header`, `bench.synthetic_batch`);
their raw results go to `bench/results/<script>/`. The tools that run TensorFlow's step under jax are in tools/xla/,
the experiments that measure the package against itself in experiments/.
"""

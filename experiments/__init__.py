"""Experiments: runs of the package's own commands that answer a question about its results (why the small model
plateaus, how `small_fast` does on other text, whether packing hurts learning per token), each measured against
the package itself rather than a peer (bench/ holds the peer benchmarks). Run from the repository's root as modules:
`.venv/bin/python -m experiments.quick_start_corpora ...`. Each writes its rows under
`experiments/results/<script>/` (`RESULTS`); `BENCH_RESULTS` moves them, as for the benchmarks (a smoke run's rows
are not results).
"""

import os

RESULTS = os.environ.get("BENCH_RESULTS") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

"""XLA:CPU's estimate of a recipe's training-step memory, one JSON line per phase with `fixed_gib` and
`per_sequence_gib`: the `cpu` subcommand of tools/xla/plan_platforms.py, the one tool behind configs/platforms.yaml,
under the name this command has always had.

    python tools/estimate_memory.py --config=bert_large_paper --phases=seq512
    python tools/estimate_memory.py --config=bert_large_paper --phases=seq512 --row_packing
"""

import os
import runpy
import sys

if __name__ == "__main__":
    sys.argv = [sys.argv[0], "cpu"] + sys.argv[1:]
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "xla", "plan_platforms.py"),
                   run_name="__main__")

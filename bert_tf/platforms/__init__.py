"""Platform planning: the platforms file `bert-pretrain --platform` reads (`platforms_file`), the one rule for the
largest micro-batch that fits a device (`micro_batch`), the one depth extrapolation (`depth`), the raw rows a
compiler's buffer sizes are recorded in (`compiler_rows`), the compile targets (`compile_targets`), the plan from
those rows (`compiled_plan`) and the file's text written from the plan (`platforms_yaml`). Pure Python: nothing here
imports TensorFlow or jax; tools/xla/plan_platforms.py compiles the steps and writes the file."""

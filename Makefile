# Two commands for a newcomer: `make run` (the main job on embedded defaults) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
STAMP := $(VENV)/.hoptree-installed

.PHONY: install run test lint format clean

# CPU torch goes in first: sentence-transformers' bare `torch` requirement would otherwise pull CUDA.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/hoptree demo

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports  # the floors: pyproject.toml [tool.importlinter]

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info

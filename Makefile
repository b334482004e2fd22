# The two commands of the README: `make demo` and `make test`. Both build .venv from nothing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench lint typecheck clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check reaper handlers tests bench tasks.py
	$(BIN)/ruff format --check reaper handlers tests bench tasks.py

typecheck: $(STAMP)
	$(BIN)/mypy reaper handlers

test: lint typecheck
	$(BIN)/pytest

demo: $(STAMP)
	$(BIN)/reaper demo

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

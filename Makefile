# The two commands of the README: `make demo` and `make test`. Both build .venv from nothing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The Serverless Framework CLI (osls, from npm with the committed lock file) packages and checks
# the AWS deployment offline in `make test`.
NODE_STAMP := node_modules/.installed

.PHONY: test demo bench lint typecheck clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml emulators/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e . -e ./emulators
	touch $(STAMP)

$(NODE_STAMP): package.json package-lock.json
	@if command -v npm >/dev/null 2>&1; then npm ci --no-audit --no-fund --loglevel=error && touch $(NODE_STAMP); \
	else echo "npm not found: tests/test_aws_package.py will be skipped"; fi

lint: $(STAMP)
	$(BIN)/ruff check reaper handlers emulators tests bench tasks.py infra/aws
	$(BIN)/ruff format --check reaper handlers emulators tests bench tasks.py infra/aws

typecheck: $(STAMP)
	$(BIN)/mypy reaper handlers emulators

test: lint typecheck $(NODE_STAMP)
	$(BIN)/pytest

demo: $(STAMP)
	$(BIN)/reaper demo

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis node_modules build .serverless

# The two commands of the README: `make demo` and `make test`. Both build .venv from nothing.
# `make demo` installs only what the demo runs: the pinned runtime (requirements.txt), reaper
# and the emulators (21 packages, 55 MB, under 30 s from a fresh clone). `make test` adds the
# development toolchain (requirements-dev.txt: pytest, mypy, ruff, moto, ...) on top of that.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_STAMP := $(VENV)/.demo-installed
STAMP := $(VENV)/.installed
PIP := $(BIN)/pip install --quiet --disable-pip-version-check
# The Serverless Framework CLI (osls, from npm with the committed lock file) packages and checks
# the AWS deployment offline in `make test`.
NODE_STAMP := node_modules/.installed

.PHONY: test demo bench bench-demo bench-suite fuzz lint typecheck clean

# The build tools go in with the runtime, so that the two editable installs build in the venv
# itself (no isolated build environment downloaded for each: that was half of the install).
$(DEMO_STAMP): requirements.txt pyproject.toml emulators/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements.txt "setuptools>=64" wheel
	$(PIP) --no-build-isolation --no-deps -e . -e ./emulators
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP) requirements-dev.txt
	$(PIP) -r requirements-dev.txt
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

demo: $(DEMO_STAMP)
	$(BIN)/reaper demo

# The property tests with new random draws each run (`make test` draws the same ones every
# time), FUZZ_RUNS times; a failure prints the @reproduce_failure line that replays it.
FUZZ_RUNS ?= 5
fuzz: $(STAMP)
	for i in $$(seq $(FUZZ_RUNS)); do REAPER_HYPOTHESIS=explore $(BIN)/pytest -p no:cacheprovider \
		$$(grep -l "^from hypothesis" tests/test_*.py) || exit 1; done

bench: $(STAMP)
	$(BIN)/python -m bench

# `make demo` from a fresh clone of this branch, install included, timed (not part of `bench`:
# it measures the package index and the network as much as reaper).
bench-demo:
	$(PYTHON) -m bench.fresh_demo

# The whole suite's wall time, once quiet and five times beside a CPU hog, with the flaky tests
# and the slowest ones (not part of `bench`: it runs the whole suite six times, about 40 min).
# HOG_RUNS=1 for a shorter measure.
HOG_RUNS ?= 5
bench-suite: $(STAMP)
	$(BIN)/python -m bench.suite --hog-runs $(HOG_RUNS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis node_modules build .serverless

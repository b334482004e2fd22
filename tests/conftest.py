"""Shared test hygiene: every test starts with no registered secrets and default log output, and
a browser test with a browser as clean as a fresh one."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from reaper import log
from tests.browser_support import chromium, clean

# Where the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE), the suite still
# keeps it, in the virtualenv rather than beside the sources: pytest rewrites the assertions of
# every test module each run otherwise, ~15 s of CPU for each worker. Only pytest's process.
if sys.dont_write_bytecode and sys.prefix != sys.base_prefix:
    sys.dont_write_bytecode = False
    sys.pycache_prefix = str(Path(sys.prefix) / "pycache")

# The suite draws the same examples on every run (seeded from each test's source), so a red
# run means a change broke something, never a new random draw; `make fuzz` draws new ones
# (REAPER_HYPOTHESIS=explore) and prints how to replay what it finds.
hypothesis_settings.register_profile("suite", derandomize=True, database=None, print_blob=True)
hypothesis_settings.register_profile("explore", derandomize=False, print_blob=True)
hypothesis_settings.load_profile(os.environ.get("REAPER_HYPOTHESIS", "suite"))


@pytest.fixture(autouse=True)
def _isolated_log() -> Iterator[None]:
    log.forget_secrets()
    log.configure()
    yield
    log.forget_secrets()
    log.configure()


@pytest.fixture(scope="module")
def module_browser() -> Iterator[Any]:
    """One Chromium for a module's browser tests (see tests/browser_support.py)."""
    with chromium() as driver:
        yield driver


@pytest.fixture
def browser(module_browser: Any) -> Any:
    """The module's Chromium, with nothing left of the test before."""
    clean(module_browser)
    return module_browser


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject's addopts): one worker more than the cores this process may use. The
    suite waits on sockets, subprocesses and browsers; with a worker per core about a fifth of
    the CPU stood idle (2 cores: 7.7 min with 2 workers, 6.9 with 3). `--maxprocesses` still
    caps it; PYTEST_XDIST_AUTO_NUM_WORKERS still overrides it."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    return len(os.sched_getaffinity(0)) + 1

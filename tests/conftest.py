"""Shared test hygiene: every test starts with no registered secrets and default log output, and
a browser test with a browser as clean as a fresh one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from reaper import log
from tests.browser_support import chromium, clean

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

"""Shared test hygiene: every test starts with no registered secrets and default log output."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings as hypothesis_settings

from reaper import log

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

"""Shared test hygiene: every test starts with no registered secrets and default log output."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reaper import log


@pytest.fixture(autouse=True)
def _isolated_log() -> Iterator[None]:
    log.forget_secrets()
    log.configure()
    yield
    log.forget_secrets()
    log.configure()

"""Capturing reaper's structured log in a test."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager

from reaper import log


@contextmanager
def json_log() -> Iterator[io.StringIO]:
    """Log lines as JSON into a string for the block; the default logging again after it,
    whatever the block raised, so that no other test inherits the stream."""
    stream = io.StringIO()
    log.configure(json_lines=True, stream=stream)
    try:
        yield stream
    finally:
        log.configure()

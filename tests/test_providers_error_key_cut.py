"""An error body that echoes the account key near the 200-character cut of the error summary
leaks no part of the key: the summary is scrubbed whole and only then shortened, both in the
ProviderError (which reaches logs, alerts, `--json` and the store) and in the retry log line."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from emulators.server import EmulatorServer, Request, Response
from reaper.providers.base import HttpOptions
from tests.log_support import json_log
from tests.provider_support import runpod_listing_error

FAST = HttpOptions(timeout=2, max_attempts=2, backoff_base=0.001, backoff_cap=0.002)
KEY = "rpa_SECRETKEY0123456789abcdefXYZ"


class EchoKey(EmulatorServer):
    """Answers every call with `status` and a plain-text body that ends with the key."""

    provider = "runpod"

    def __init__(self, status: int, padding: int) -> None:
        super().__init__({"main": KEY})
        self.status = status
        self.padding = padding

    def dispatch(self, request: Request) -> Response:
        return Response.text(self.status, "x" * self.padding + " invalid key " + KEY)


@pytest.fixture
def captured_log() -> Iterator[io.StringIO]:
    with json_log() as stream:
        yield stream


def leaked_prefixes(text: str) -> list[str]:
    return [KEY[:n] for n in range(8, len(KEY) + 1) if KEY[:n] in text]


# The summary is cut at 200 characters; these paddings put the cut inside the key, at its
# first character and just after it.
@pytest.mark.parametrize("padding", [160, 170, 175, 186, 187])
def test_a_key_straddling_the_cut_of_a_4xx_summary_does_not_leak(padding: int) -> None:
    with EchoKey(401, padding) as server:
        error = runpod_listing_error(server, KEY, FAST)
    assert "HTTP 401" in error.message
    assert "x" * 20 in error.message  # the body's reason is still reported
    assert leaked_prefixes(error.message) == []
    assert leaked_prefixes(str(error)) == []


@pytest.mark.parametrize("padding", [170, 180])
def test_a_key_straddling_the_cut_of_a_retried_5xx_does_not_leak_to_the_log_or_error(
    padding: int, captured_log: io.StringIO
) -> None:
    with EchoKey(503, padding) as server:
        error = runpod_listing_error(server, KEY, FAST)
        attempts = len(server.requests)
    output = captured_log.getvalue()
    assert attempts == FAST.max_attempts
    assert "provider_retry" in output
    assert "HTTP 503" in error.message
    assert leaked_prefixes(output) == []
    assert leaked_prefixes(error.message) == []

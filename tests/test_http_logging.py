"""No key in any log line: each request is one line with the key replaced by `***`, and
uvicorn's access log (which would print the raw request line) is off."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from reaper import log
from reaper.interfaces.http import redact_path
from tests.heartbeat_support import ADMIN, KEY, make_settings, served
from tests.log_support import json_log


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    with json_log() as stream:
        yield stream


def test_no_request_puts_a_key_in_the_log(
    tmp_path: Path, lines: io.StringIO, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with served(make_settings(tmp_path)) as app:
        app.ping("h")
        app.ping("h", "fail", method="POST", body=f"leaked {KEY}".encode())
        app.ping("h", key=KEY + "typo")
        app.http.post(f"/alert/{KEY}", json={"text": "hi"})
        app.http.get(f"/pingg/{KEY}/h")  # a misspelt route still carries the key
        app.http.get(f"/ping/{KEY}")
        app.http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"})
    text = lines.getvalue()
    assert KEY not in text and ADMIN not in text
    server_records = [r for r in caplog.records if r.name.startswith("uvicorn")]
    assert all(KEY not in r.getMessage() for r in server_records)
    http_lines = [line for line in text.splitlines() if '"event": "http"' in line]
    assert len(http_lines) == 7
    assert '"route": "/ping/***/h"' in text


def test_uvicorn_runs_without_access_log_or_server_header(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        config = app.running.server.config
    assert config.access_log is False
    assert config.server_header is False
    assert config.workers == 1


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/ping/secret/host/start", "/ping/***/host/start"),
        ("/alert/secret", "/alert/***"),
        ("/healthz", "/healthz"),
        ("/ping/k/h\n/fake-line", "/ping/***/h?/fake-line"),
    ],
)
def test_redact_path(path: str, logged: str) -> None:
    assert redact_path(path) == logged


def test_a_long_path_is_cut() -> None:
    assert len(redact_path("/" + "a" * 5000)) == 200


def test_a_key_outside_its_segment_is_scrubbed_before_the_cut() -> None:
    """A proxy prefix or a doubled slash moves the key out of the second segment; cutting
    to 200 characters first would leave its start, no longer a whole secret, in the log."""
    log.register_secrets([KEY])
    logged = redact_path("/" + "p" * 180 + "/ping/" + KEY + "/host")
    assert KEY[:8] not in logged
    assert len(logged) <= 200


def test_a_served_request_never_logs_a_key_prefix(tmp_path: Path, lines: io.StringIO) -> None:
    with served(make_settings(tmp_path)) as app:
        app.http.get("/" + "p" * 180 + "/ping/" + KEY + "/host")
    assert '"event": "http"' in lines.getvalue()
    assert KEY[:8] not in lines.getvalue()

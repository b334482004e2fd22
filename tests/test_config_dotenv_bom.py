"""A `.env` saved with a UTF-8 byte order mark (Windows editors do) reads like any other: the
mark must not become part of the first variable's name."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from reaper.app.settings import load_settings


def test_a_dotenv_with_a_bom_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_bytes("REAPER_STOPPED_TTL=48h\nREAPER_MODE=observe\n".encode("utf-8-sig"))
    assert dotenv.read_bytes().startswith(b"\xef\xbb\xbf")

    settings = load_settings({}, dotenv=dotenv)

    assert settings.stopped_ttl == timedelta(hours=48)
    assert settings.mode == "observe"
    assert capsys.readouterr().err == ""  # no "unknown variable \ufeffREAPER_STOPPED_TTL"


def test_a_bom_in_the_middle_is_still_an_error(tmp_path: Path) -> None:
    """Only the leading mark is an encoding detail; anywhere else it is a broken name."""
    dotenv = tmp_path / ".env"
    dotenv.write_text("REAPER_MODE=observe\n\ufeffREAPER_STOPPED_TTL=48h\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"\.env line 2"):
        load_settings({}, dotenv=dotenv)

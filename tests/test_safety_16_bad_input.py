"""Issue 12.16: bad settings are one line naming the variable, exit 2, nothing half-runs, and
no secret is ever echoed."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cli_process import run_reaper
from tests.reap_support import cli, world


def run(
    tmp_path: Path, args: list[str], env: dict[str, str], *, code: str = ""
) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "REAPER_STATE": f"sqlite:///{tmp_path}/s.db",
    }
    if not code:
        return run_reaper(args, env={**base, **env}, cwd=tmp_path, timeout=60)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**base, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_line(result: subprocess.CompletedProcess[str], variable: str) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert variable in result.stderr
    return result.stderr


@pytest.mark.parametrize("key", ["rpa_ABC\u201dDEF", "rpa_\u200bABC", "rpa_ABCé"])
def test_a_key_with_a_non_ascii_character_is_one_line_and_nothing_is_listed(
    tmp_path: Path, key: str
) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        result = cli(w, "reap", extra_env={"RUNPOD_API_KEY": key})
        stderr = one_line(result, "RUNPOD_API_KEY")
        assert "ABC" not in stderr
        assert w.runpod.requests == [] and w.vast.requests == [], "nothing half-runs"


def test_an_unnamed_base64_key_with_padding_is_one_key_not_a_name(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        padded = "c2VjcmV0LWtleS0xMjM0NQ=="
        w.runpod.keys["main"] = padded
        result = cli(w, "reap", "--json", extra_env={"RUNPOD_API_KEY": padded})
        assert result.returncode == 0, result.stderr
        assert "c2VjcmV0" not in result.stdout + result.stderr
        assert [r.account for r in w.runpod.requests if r.kind == "list"] == ["main"]


def test_a_malformed_bark_url_is_not_echoed(tmp_path: Path) -> None:
    result = run(tmp_path, ["status"], {"BARK_URL": "htps://api.day.app/DeViCeKeY123"})
    stderr = one_line(result, "BARK_URL")
    assert "DeViCeKeY123" not in stderr


def test_a_duration_too_large_is_one_line(tmp_path: Path) -> None:
    result = run(tmp_path, ["status"], {"REAPER_STOPPED_TTL": "99999999999999999999d"})
    one_line(result, "REAPER_STOPPED_TTL")


def test_dynamodb_without_a_region_is_one_line(tmp_path: Path) -> None:
    result = run(tmp_path, ["status"], {"REAPER_STATE": "dynamodb://reaper-table"})
    stderr = one_line(result, "REAPER_STATE")
    assert "region" in stderr


def test_dynamodb_without_boto3_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['boto3'] = None; from reaper.interfaces.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    result = run(tmp_path, ["status"], {"REAPER_STATE": "dynamodb://reaper-table"}, code=code)
    stderr = one_line(result, "REAPER_STATE")
    assert "pip install 'reaper[aws]'" in stderr


def test_serve_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['uvicorn'] = None; from reaper.interfaces.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    result = run(tmp_path, ["serve"], {}, code=code)
    stderr = one_line(result, "reaper serve")
    assert "pip install 'reaper[serve]'" in stderr


def test_an_unexpected_failure_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    code = (
        "import sys, reaper.interfaces.commands as r\n"
        "def boom(*a, **k): raise RuntimeError('internal')\n"
        "r.audit_command = boom\n"
        "from reaper.interfaces.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    result = run(tmp_path, ["audit"], {}, code=code)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "reaper: unexpected error: RuntimeError: internal (REAPER_DEBUG=1 shows where)"
    )

"""`reaper login-link`: a one-time link under REAPER_PUBLIC_URL, recorded (hashed) in the
store the server reads; without the admin key or the public URL, one line and exit 2."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from reaper.interfaces.web.session import TOKEN_PATTERN, token_hash
from reaper.store.sqlite import SQLiteStore
from tests.cli_process import run_reaper


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_reaper(
        ["login-link"],
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
            **env,
        },
        cwd=tmp_path,
    )


def test_login_link_prints_a_link_the_store_can_spend_once(tmp_path: Path) -> None:
    done = _run(
        tmp_path,
        REAPER_ADMIN_KEY="admin-key-cli-1234",
        REAPER_PUBLIC_URL="https://reaper.example.com/",
    )
    assert done.returncode == 0, done.stderr
    link = done.stdout.strip()
    assert link.startswith("https://reaper.example.com/login/")
    token = link.rsplit("/", 1)[1]
    assert TOKEN_PATTERN.fullmatch(token)
    assert "once" in done.stderr and "15 minutes" in done.stderr
    assert "admin-key-cli-1234" not in done.stdout + done.stderr
    store = SQLiteStore(str(tmp_path / "state.db"))
    try:
        now = datetime.now(UTC)
        assert store.use_login_token(token_hash(token), now)
        assert not store.use_login_token(token_hash(token), now)
    finally:
        store.close()


def test_login_link_without_its_settings_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for env, variable in (
        ({"REAPER_PUBLIC_URL": "https://reaper.example.com"}, "REAPER_ADMIN_KEY"),
        ({"REAPER_ADMIN_KEY": "admin-key-cli-1234"}, "REAPER_PUBLIC_URL"),
        (
            {"REAPER_ADMIN_KEY": "admin-key-cli-1234", "REAPER_PUBLIC_URL": "http://example.com"},
            "REAPER_PUBLIC_URL",
        ),
    ):
        done = _run(tmp_path, **env)
        assert done.returncode == 2
        assert done.stdout == ""
        [line] = done.stderr.splitlines()
        assert line.startswith(f"reaper: {variable}")
    assert not (tmp_path / "state.db").exists(), "nothing opened for a config error"

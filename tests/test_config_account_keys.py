"""A key with `=` in it is one key: `name=key` only when an account name comes before the first
`=` and a key after it that is not only `=`. A base64 key's padding (`Zm9v...=`) is never read
as `name=` — the key's text printed as an account name in stdout, the log and alerts, and
`Bearer =` sent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from emulators import RunPodEmulator
from reaper.app.settings import load_settings
from reaper.settings.parse import split_named
from tests.cli_process import run_reaper


@pytest.mark.parametrize(
    "entry",
    [
        "Zm9vYmFyYmF6cXV4YQ==",  # base64, whole blocks
        "abcdefgh==",  # padding that is not whole blocks
        "rpa_ABCDEFGHIJ1234567890=",  # a plausible "name" with nothing after it
        "name=",
        "a.b-c_d=",
    ],
)
def test_an_entry_whose_part_after_the_first_equals_is_padding_is_one_unnamed_key(
    entry: str,
) -> None:
    assert split_named(entry) == (None, entry)
    [account] = load_settings({"RUNPOD_API_KEY": entry}).accounts
    assert (account.name, account.key) == ("1", entry)


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ("main=rk_abc", ("main", "rk_abc")),
        ("main=abc==", ("main", "abc==")),
        (" work = rk_x= ", ("work", "rk_x=")),
        ("not a name=rk_abc", (None, "not a name=rk_abc")),
        ("a/b=rk_abc", (None, "a/b=rk_abc")),
    ],
)
def test_name_equals_key_needs_a_name_and_a_key(entry: str, named: tuple[str | None, str]) -> None:
    assert split_named(entry.strip()) == (named[0], named[1].strip())


def test_a_padded_key_reaches_the_provider_whole_and_is_never_shown(tmp_path: Path) -> None:
    key = "rkAbCdEfGhIjKlMnOpQr=="  # padding on no whole block of four
    with RunPodEmulator({"main": key}) as runpod:
        runpod.add_pod(status="RUNNING", name="trainer")
        done = run_reaper(
            ["reap", "--json"],
            env={
                "PATH": os.environ["PATH"],
                "HOME": str(tmp_path),
                "RUNPOD_API_KEY": key,
                "RUNPOD_API_URL": runpod.rest_url,
                "RUNPOD_GRAPHQL_URL": runpod.graphql_url,
                "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
            },
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["errors"] == []
    assert [i["account"] for i in report["instances"]] == ["1"]
    assert "rkAbCd" not in done.stdout + done.stderr

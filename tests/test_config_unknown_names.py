"""A misspelt setting is not read, and its default silently applies (`REAPER_STOPED_TTL=48h`
leaves the 24h TTL): one line on stderr with the nearest known name, from the environment and
from `.env`. For `reaper reap` and `reaper serve` in enforce mode an unknown REAPER_* name is an
error (exit 2, before anything is listed): a typo must not make the destroyer more aggressive
than asked. `REAPER_ALLOW_UNKNOWN=true`, observe mode and every other command only warn."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from reaper.app.known import unknown_setting_warnings
from reaper.app.settings import known_variables, load_settings
from tests.cli_process import run_reaper

ROOT = Path(__file__).resolve().parents[1]
PREFIXES = r"(?:REAPER|HEARTBEAT|RUNPOD|VAST|TELEGRAM|BARK|NTFY|BALANCE|IDLE|LOG)_[A-Z0-9_]+"


def test_a_typo_in_the_environment_names_the_nearest_setting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = load_settings({"REAPER_STOPED_TTL": "48h"}, dotenv=None)
    assert settings.stopped_ttl.total_seconds() == 24 * 3600  # not read: the default applies
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        "reaper: warning: REAPER_STOPED_TTL is not a setting reaper knows: ignored;"
        " did you mean REAPER_STOPPED_TTL?"
    )


def test_a_typo_in_dotenv_says_where_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("HEARTBEAT_TIMOUT=10m\n")
    load_settings({}, dotenv=dotenv)
    [line] = capsys.readouterr().err.splitlines()
    assert "HEARTBEAT_TIMOUT (in .env)" in line and "did you mean HEARTBEAT_TIMEOUT?" in line


@pytest.mark.parametrize(
    ("name", "nearest"),
    [
        ("RUNPOD_API_KY", "RUNPOD_API_KEY"),
        ("VAST_APIKEY", "VAST_API_KEY"),
        ("TELEGRAM_CHATID", "TELEGRAM_CHAT_ID"),
        ("BARK_URLS", "BARK_URL"),
        ("NTFY_TOKN", "NTFY_TOKEN"),
        ("BALANCE_HOUR", "BALANCE_HOURS"),
        ("reaper_mode", "REAPER_MODE"),
        ("LOG_LEVL", "LOG_LEVEL"),
    ],
)
def test_every_prefix_of_the_product_is_checked(name: str, nearest: str) -> None:
    [line] = unknown_setting_warnings([name], known_variables())
    assert line.endswith(f"did you mean {nearest}?")


def test_an_unknown_reaper_name_without_a_near_one_is_still_named() -> None:
    [line] = unknown_setting_warnings(["REAPER_FOO"], known_variables())
    assert line == "warning: REAPER_FOO is not a setting reaper knows: ignored"


@pytest.mark.parametrize(
    "name",
    # RunPod sets RUNPOD_* variables inside every pod; other tools share LOG_ and TELEGRAM_.
    ["RUNPOD_POD_HOSTNAME", "RUNPOD_GPU_COUNT", "LOG_DIR", "TELEGRAM_PROXY", "PATH", "HOME"],
)
def test_other_tools_names_with_a_shared_prefix_are_left_alone(name: str) -> None:
    assert unknown_setting_warnings([name], known_variables()) == []


def test_a_warning_is_not_an_error_and_the_rest_is_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = load_settings({"REAPER_MODEE": "observe", "REAPER_MODE": "observe"}, dotenv=None)
    assert settings.mode == "observe"
    assert "REAPER_MODEE" in capsys.readouterr().err


def test_every_name_reaper_reads_is_known(capsys: pytest.CaptureFixture[str]) -> None:
    """Every variable the code, the deployment and the kit mention is known: no warning for a
    correct setting, ever (a new setting must be added to reaper/app/known.py)."""
    sources = [
        *ROOT.joinpath("reaper").rglob("*.py"),
        *ROOT.joinpath("handlers").rglob("*.py"),
        *ROOT.joinpath("infra", "instance").glob("*.sh"),
        ROOT / "serverless.yml",
        ROOT / "infra" / "aws" / "reaper-plugin.js",
    ]
    mentioned: set[str] = set()
    for path in sources:
        text = path.read_text(encoding="utf-8")
        # Quoted names (Python strings, env lookups) and ${NAME} / $NAME (shell, YAML).
        mentioned |= set(re.findall(rf"[\"'`]({PREFIXES})[\"'`]", text))
        mentioned |= set(re.findall(rf"\$\{{?({PREFIXES})", text))
        mentioned |= set(re.findall(rf"env:({PREFIXES})", text))
    # Constants of the code that look like names but are not variables.
    mentioned -= {n for n in mentioned if n.endswith(("_PREFIX", "_QUERY"))}
    assert mentioned, "the scan found nothing: its patterns are broken"
    unknown = [line for line in unknown_setting_warnings(mentioned, known_variables())]
    assert unknown == []


def _reaper(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_reaper(
        args,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
            **env,
        },
        cwd=tmp_path,
        timeout=60,
    )


@pytest.mark.parametrize("args", [("reap",), ("reap", "--dry-run", "--json"), ("serve",)])
def test_reap_and_serve_in_enforce_mode_refuse_an_unknown_reaper_name(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    result = _reaper(tmp_path, *args, REAPER_STOPED_TTL="48h", RUNPOD_API_KEY="rk_typo_test_123")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("reaper: REAPER_STOPED_TTL: not a setting reaper knows;")
    assert "did you mean REAPER_STOPPED_TTL?" in line and "REAPER_ALLOW_UNKNOWN=true" in line
    assert result.stdout == ""


def test_a_typo_in_dotenv_is_refused_too_and_says_where(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("REAPER_WARN_BEFOR=2h\n")
    result = _reaper(tmp_path, "reap", RUNPOD_API_KEY="rk_typo_test_123")
    assert result.returncode == 2
    assert "REAPER_WARN_BEFOR: not a setting reaper knows (in .env)" in result.stderr


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("reap", "--dry-run"), {"REAPER_ALLOW_UNKNOWN": "true"}),
        (("reap", "--dry-run"), {"REAPER_MODE": "observe"}),
        (("monitor", "list"), {}),
    ],
)
def test_otherwise_an_unknown_name_is_one_warning_and_the_command_goes_on(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    # No provider key: the one config error of `reap` comes after the one warning.
    result = _reaper(tmp_path, *args, REAPER_STOPED_TTL="48h", **env)
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (
        "reaper: warning: REAPER_STOPED_TTL is not a setting reaper knows: ignored;"
        " did you mean REAPER_STOPPED_TTL?"
    )
    if args[0] == "reap":
        assert result.returncode == 2
        assert (
            lines[1]
            == "reaper: RUNPOD_API_KEY / VAST_API_KEY / DIGITALOCEAN_TOKEN: set at least one"
        )
    else:  # no state yet: the command's own one line follows the warning
        assert len(lines) == 2 and "REAPER_STOPED_TTL" not in lines[1]


def test_shared_prefixes_stay_warnings_for_reap(tmp_path: Path) -> None:
    result = _reaper(tmp_path, "reap", "--dry-run", HEARTBEAT_TIMOUT="10m")
    assert "HEARTBEAT_TIMOUT is not a setting reaper knows" in result.stderr
    assert "set at least one" in result.stderr.strip().splitlines()[-1]


def test_the_unknown_names_are_kept_for_the_lambda_handlers() -> None:
    settings = load_settings({"REAPER_STOPED_TTL": "48h", "REAPER_FOO": "1"}, dotenv=None)
    assert settings.unknown_names == ("REAPER_FOO", "REAPER_STOPED_TTL")

"""Settings: every variable parsed, every error naming its variable."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from reaper.app.settings import load_settings
from reaper.settings.parse import ConfigError, parse_duration
from tests.cli_process import run_reaper
from tests.settings_support import Flat


def load(env: dict[str, str], dotenv: Path | None = None) -> Any:
    """The settings, readable by the flat names of the variables they came from."""
    return Flat(load_settings(env, dotenv=dotenv))


def test_defaults_match_the_contract() -> None:
    s = load({})
    assert s.runpod_accounts == () and s.vast_accounts == ()
    assert s.runpod_api_url == "https://api.runpod.io/v2"
    assert s.runpod_graphql_url == "https://api.runpod.io/graphql"
    assert s.vast_api_url == "https://console.vast.ai"
    assert s.mode == "enforce"
    assert s.stopped_ttl == timedelta(hours=24)
    assert s.warn_before == timedelta(hours=1)
    assert s.max_terminations == 10
    assert s.protect_marker == "reaper:keep"
    assert s.state.kind == "sqlite" and s.state.location.endswith("reaper/state.db")
    assert s.ping_key is None and s.admin_key is None
    assert s.heartbeat_timeout == timedelta(minutes=5)
    assert s.heartbeat_repeat == timedelta(hours=1)
    assert s.telegram_api_url == "https://api.telegram.org"
    assert s.balance_min == 5.0
    assert s.max_monitors == 500
    assert s.heartbeat_required is False
    assert s.reap_every == timedelta(hours=1) and s.watch_every == timedelta(minutes=1)
    assert s.max_runtime is None
    assert s.idle_alert_after == timedelta(hours=1)


def test_state_default_follows_xdg_state_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "/tmp/xdg-here")
    assert load({}).state.location == "/tmp/xdg-here/reaper/state.db"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("24h", timedelta(hours=24)),
        ("3d", timedelta(days=3)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        (" 2H ", timedelta(hours=2)),
        ("2w", timedelta(weeks=2)),
        ("1w3d", timedelta(days=10)),
    ],
)
def test_durations_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text, "X") == expected


@pytest.mark.parametrize("text", ["24", "0h", "0s", "-1h", "1.5h", "h", "1h 30m", "1y", "", "1hm"])
def test_bad_durations_are_errors_naming_the_variable(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_duration(text, "HEARTBEAT_TIMEOUT")
    assert str(err.value).startswith("HEARTBEAT_TIMEOUT: ")
    assert "\n" not in str(err.value)


def test_several_accounts_named_and_unnamed() -> None:
    s = load({"RUNPOD_API_KEY": "work=rk_aaa, rk_bbb", "VAST_API_KEY": "vk_one"})
    assert [(a.name, a.key) for a in s.runpod_accounts] == [("work", "rk_aaa"), ("2", "rk_bbb")]
    assert [(a.provider, a.name, a.key) for a in s.vast_accounts] == [("vast", "1", "vk_one")]


def test_account_keys_never_show_in_reprs() -> None:
    s = load({"RUNPOD_API_KEY": "team=rk_secret_value", "REAPER_PING_KEY": "pingsecret"})
    assert "rk_secret_value" not in repr(s)
    assert "pingsecret" not in repr(s)
    assert "rk_secret_value" in s.secrets() and "pingsecret" in s.secrets()


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"RUNPOD_API_KEY": "a,,b"}, "RUNPOD_API_KEY"),
        ({"VAST_API_KEY": "x=k1,x=k2"}, "VAST_API_KEY"),
        ({"VAST_API_KEY": "bad name=k1"}, "VAST_API_KEY"),
        ({"REAPER_MODE": "destroy"}, "REAPER_MODE"),
        ({"REAPER_STOPPED_TTL": "30m"}, "REAPER_STOPPED_TTL"),
        ({"REAPER_STOPPED_TTL": "24"}, "REAPER_STOPPED_TTL"),
        ({"REAPER_WARN_BEFORE": "24h"}, "REAPER_WARN_BEFORE"),
        ({"REAPER_WARN_BEFORE": "2h", "REAPER_STOPPED_TTL": "1h"}, "REAPER_WARN_BEFORE"),
        ({"REAPER_MAX_TERMINATIONS": "-1"}, "REAPER_MAX_TERMINATIONS"),
        ({"REAPER_MAX_TERMINATIONS": "ten"}, "REAPER_MAX_TERMINATIONS"),
        ({"REAPER_STATE": "postgres://x"}, "REAPER_STATE"),
        ({"REAPER_STATE": "sqlite:///"}, "REAPER_STATE"),
        ({"REAPER_STATE": "dynamodb://"}, "REAPER_STATE"),
        ({"REAPER_PING_KEY": "has space"}, "REAPER_PING_KEY"),
        ({"REAPER_ADMIN_KEY": "a/b"}, "REAPER_ADMIN_KEY"),
        ({"HEARTBEAT_TIMEOUT": "0m"}, "HEARTBEAT_TIMEOUT"),
        ({"HEARTBEAT_REPEAT": "soon"}, "HEARTBEAT_REPEAT"),
        ({"TELEGRAM_BOT_TOKEN": "123:abc"}, "TELEGRAM_CHAT_ID"),
        ({"TELEGRAM_CHAT_ID": "42"}, "TELEGRAM_BOT_TOKEN"),
        ({"TELEGRAM_BOT_TOKEN": "nocolon", "TELEGRAM_CHAT_ID": "42"}, "TELEGRAM_BOT_TOKEN"),
        ({"TELEGRAM_API_URL": "ftp://x"}, "TELEGRAM_API_URL"),
        ({"BARK_URL": "https://api.day.app/"}, "BARK_URL"),
        ({"BARK_URL": "api.day.app/key"}, "BARK_URL"),
        ({"BALANCE_MIN": "five"}, "BALANCE_MIN"),
        ({"BALANCE_MIN": "-1"}, "BALANCE_MIN"),
        ({"BALANCE_MIN": "nan"}, "BALANCE_MIN"),
        ({"REAPER_MAX_MONITORS": "0"}, "REAPER_MAX_MONITORS"),
        ({"HEARTBEAT_REQUIRED": "maybe"}, "HEARTBEAT_REQUIRED"),
        ({"REAPER_REAP_EVERY": "1"}, "REAPER_REAP_EVERY"),
        ({"REAPER_WATCH_EVERY": "0s"}, "REAPER_WATCH_EVERY"),
        ({"REAPER_MAX_RUNTIME": "forever"}, "REAPER_MAX_RUNTIME"),
        ({"IDLE_ALERT_AFTER": "-5m"}, "IDLE_ALERT_AFTER"),
        ({"RUNPOD_API_URL": "not a url"}, "RUNPOD_API_URL"),
        ({"RUNPOD_GRAPHQL_URL": "http://"}, "RUNPOD_GRAPHQL_URL"),
        ({"VAST_API_URL": "console.vast.ai"}, "VAST_API_URL"),
        (
            {"REAPER_PING_KEY": "same-key-1234", "REAPER_ADMIN_KEY": "same-key-1234"},
            "REAPER_ADMIN_KEY",
        ),
    ],
)
def test_every_error_names_its_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(env)
    assert err.value.variable == variable
    assert str(err.value).startswith(f"{variable}: ")
    assert "\n" not in str(err.value)


def test_error_messages_never_echo_a_key() -> None:
    with pytest.raises(ConfigError) as err:
        load({"RUNPOD_API_KEY": "a=rk_secret1,a=rk_secret2"})
    assert "rk_secret" not in str(err.value)


def test_values_parse() -> None:
    s = load(
        {
            "REAPER_MODE": "observe",
            "REAPER_STOPPED_TTL": "2d",
            "REAPER_WARN_BEFORE": "3h",
            "REAPER_MAX_TERMINATIONS": "0",
            "REAPER_PROTECT": "DONT",
            "REAPER_STATE": "dynamodb://reaper-state",
            "HEARTBEAT_REQUIRED": "true",
            "REAPER_MAX_RUNTIME": "3d",
            "BALANCE_MIN": "2.5",
            "TELEGRAM_BOT_TOKEN": "123456:ABC-def_ghi",
            "TELEGRAM_CHAT_ID": "-100123",
            "BARK_URL": "https://bark.example.com/prefix/devkey/",
            "RUNPOD_API_URL": "http://127.0.0.1:9999/v2/",
        }
    )
    assert s.mode == "observe" and s.stopped_ttl == timedelta(days=2)
    assert s.warn_before == timedelta(hours=3) and s.max_terminations == 0
    assert s.protect_marker == "DONT"
    assert (s.state.kind, s.state.location) == ("dynamodb", "reaper-state")
    assert s.heartbeat_required and s.max_runtime == timedelta(days=3) and s.balance_min == 2.5
    assert s.telegram_chat_id == "-100123"
    assert s.bark_url == "https://bark.example.com/prefix/devkey"
    assert s.runpod_api_url == "http://127.0.0.1:9999/v2"
    assert "devkey" in s.secrets()


def test_sqlite_state_url_keeps_absolute_and_relative_paths() -> None:
    assert load({"REAPER_STATE": "sqlite:////var/lib/r.db"}).state.location == "/var/lib/r.db"
    assert load({"REAPER_STATE": "sqlite:///state/r.db"}).state.location == "state/r.db"


def test_empty_values_count_as_unset() -> None:
    assert load({"REAPER_MODE": "", "RUNPOD_API_KEY": "  "}).mode == "enforce"


def test_dotenv_is_read_and_the_environment_wins(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "# comment\n"
        "export RUNPOD_API_KEY='main=rk_from_file'\n"
        'REAPER_MODE="observe"\n'
        "REAPER_STOPPED_TTL=48h # two days\n"
        "\n"
    )
    s = load({"REAPER_MODE": "enforce"}, dotenv=dotenv)
    assert [(a.name, a.key) for a in s.runpod_accounts] == [("main", "rk_from_file")]
    assert s.mode == "enforce"
    assert s.stopped_ttl == timedelta(hours=48)


def test_a_malformed_dotenv_line_is_an_error(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("JUST SOME WORDS\n")
    with pytest.raises(ConfigError) as err:
        load({}, dotenv=dotenv)
    assert ".env line 1" in str(err.value)


def test_reap_requires_a_provider_key() -> None:
    with pytest.raises(ConfigError) as err:
        load({}).require_provider_keys()
    assert str(err.value) == "RUNPOD_API_KEY / VAST_API_KEY / DIGITALOCEAN_TOKEN: set at least one"


def run_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "XDG_STATE_HOME": str(cwd / "state")}
    return run_reaper(args, env={**base, **env}, cwd=cwd, timeout=60)


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_cli_bad_config_is_one_line_on_stderr_and_exit_2(tmp_path: Path, extra: list[str]) -> None:
    result = run_cli("reap", *extra, env={"REAPER_STOPPED_TTL": "24"}, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "REAPER_STOPPED_TTL" in lines[0]
    assert "Traceback" not in result.stderr


def test_cli_reap_without_keys_names_every_key_variable(tmp_path: Path) -> None:
    result = run_cli("reap", env={}, cwd=tmp_path)
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == "reaper: RUNPOD_API_KEY / VAST_API_KEY / DIGITALOCEAN_TOKEN: set at least one"
    )
    assert not (tmp_path / "state").exists()


def test_cli_bad_arguments_exit_2_with_one_line(tmp_path: Path) -> None:
    result = run_cli("reap", "--max-terminations", "-3", env={}, cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1

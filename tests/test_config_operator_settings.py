"""The settings an operator adds: BALANCE_HOURS, LOG_LEVEL, LOG_FORMAT, REAPER_DIGEST_AT; weeks
in durations; `off` exactly where the contract says; no URL with a space. Each bad value is
one line naming its variable."""

from __future__ import annotations

from datetime import time, timedelta

import pytest

from reaper.app.settings import load_settings
from reaper.settings.parse import ConfigError


def load(env: dict[str, str]):  # type: ignore[no-untyped-def]
    return load_settings(env, dotenv=None)


def test_defaults() -> None:
    s = load({})
    assert s.balance_hours == 12.0
    assert s.log_level == "info" and s.log_format is None
    assert s.digest_at == time(8, 0)


def test_values_parse() -> None:
    s = load(
        {
            "BALANCE_HOURS": "1.5",
            "LOG_LEVEL": "WARNING",
            "LOG_FORMAT": "json",
            "REAPER_DIGEST_AT": "7:30",
            "REAPER_STOPPED_TTL": "2w",
        }
    )
    assert s.balance_hours == 1.5
    assert s.log_level == "warning" and s.log_format == "json"
    assert s.digest_at == time(7, 30)
    assert s.stopped_ttl == timedelta(weeks=2)
    assert load({"BALANCE_HOURS": "0"}).balance_hours == 0.0  # the runway alert off


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("BALANCE_HOURS", "twelve"),
        ("BALANCE_HOURS", "-1"),
        ("BALANCE_HOURS", "inf"),
        ("BALANCE_HOURS", "nan"),
        ("LOG_LEVEL", "verbose"),
        ("LOG_FORMAT", "xml"),
        ("REAPER_DIGEST_AT", "8"),
        ("REAPER_DIGEST_AT", "24:00"),
        ("REAPER_DIGEST_AT", "08:60"),
        ("REAPER_DIGEST_AT", "8am"),
    ],
)
def test_bad_values_are_one_line_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        load({variable: value})
    assert err.value.variable == variable
    assert str(err.value).startswith(f"{variable}: ") and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("variable", "attr"),
    [
        ("HEARTBEAT_REPEAT", "heartbeat_repeat"),
        ("IDLE_ALERT_AFTER", "idle_alert_after"),
        ("REAPER_MAX_RUNTIME", "max_runtime"),
        ("REAPER_STUCK_AFTER", "stuck_after"),
    ],
)
def test_off_where_the_contract_says(variable: str, attr: str) -> None:
    assert getattr(load({variable: "off"}), attr) is None
    assert getattr(load({variable: "2w"}), attr) == timedelta(weeks=2)


@pytest.mark.parametrize(
    "variable",
    ["REAPER_STOPPED_TTL", "REAPER_WARN_BEFORE", "HEARTBEAT_TIMEOUT", "REAPER_REAP_EVERY"],
)
def test_off_is_an_error_where_a_duration_is_required(variable: str) -> None:
    with pytest.raises(ConfigError) as err:
        load({variable: "off"})
    assert err.value.variable == variable


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RUNPOD_API_URL", "https://api.run pod.io/v2"),
        ("RUNPOD_GRAPHQL_URL", "https://api.runpod.io/graph ql"),
        ("VAST_API_URL", "https://console.vast.ai /x"),
        ("TELEGRAM_API_URL", "https://api.telegram.org/ bot"),
        ("BARK_URL", "https://api.day.app/device key"),
        ("NTFY_URL", "https://ntfy.sh/my topic"),
    ],
)
def test_a_url_with_a_space_is_rejected(variable: str, value: str) -> None:
    env = {variable: value}
    if variable == "TELEGRAM_API_URL":
        env |= {"TELEGRAM_BOT_TOKEN": "123:abc", "TELEGRAM_CHAT_ID": "42"}
    with pytest.raises(ConfigError) as err:
        load(env)
    assert err.value.variable == variable
    assert "without spaces" in str(err.value)

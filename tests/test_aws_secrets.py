"""Secrets on AWS: read from SSM SecureString parameters at run time, cached across warm
invocations, never taken from the plain environment, errors that name the parameter."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reaper import log
from reaper.app.ssm import CACHE_SECONDS, lambda_settings, load_secrets, normalise_prefix
from reaper.settings.parse import ConfigError
from tests.aws_support import PREFIX, Account, aws_account
from tests.settings_support import Flat

RUNPOD_KEY = "rpa_SSMSECRETKEY0123456789"
PING_KEY = "ping-key-from-ssm-42"


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    with aws_account(monkeypatch) as account:
        yield account


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingSSM:
    """The real (mocked) SSM client, counting GetParametersByPath calls."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls = 0

    def get_parameters_by_path(self, **kwargs: Any) -> Any:
        self.calls += 1
        return self.client.get_parameters_by_path(**kwargs)


def env(**extra: str) -> dict[str, str]:
    return {"REAPER_SSM_PREFIX": PREFIX, "REAPER_STATE": "dynamodb://t-1", **extra}


def test_settings_come_from_secure_strings(account: Account) -> None:
    account.put_secret("RUNPOD_API_KEY", f"main={RUNPOD_KEY}")
    account.put_secret("REAPER_PING_KEY", PING_KEY)
    account.put_secret("TELEGRAM_BOT_TOKEN", "123456:ABCdef_ghi")
    account.put_secret("TELEGRAM_CHAT_ID", "-1001234")
    settings = Flat(lambda_settings(env(REAPER_MODE="observe"), client=account.ssm))
    assert [(a.name, a.key) for a in settings.runpod_accounts] == [("main", RUNPOD_KEY)]
    assert settings.ping_key == PING_KEY
    assert settings.telegram_bot_token == "123456:ABCdef_ghi"
    assert settings.mode == "observe", "non-secret settings come from the plain environment"
    assert log.redact(f"key {RUNPOD_KEY} chat -1001234") == "key [redacted] chat -1001234"
    assert settings.state.location == "t-1"


def test_secrets_in_the_plain_environment_are_ignored(
    account: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key pasted into the Lambda environment (visible to anyone who may read the
    function's configuration) is not used: SSM is the only source."""
    account.put_secret("REAPER_PING_KEY", PING_KEY)
    settings = Flat(
        lambda_settings(
            env(REAPER_PING_KEY="pasted-into-environment", RUNPOD_API_KEY="rpa_PASTED000"),
            client=account.ssm,
        )
    )
    assert settings.ping_key == PING_KEY
    assert settings.runpod_accounts == ()
    logged = capsys.readouterr().err
    assert "secret_in_environment" in logged
    assert "REAPER_PING_KEY" in logged and "RUNPOD_API_KEY" in logged
    assert "pasted-into-environment" not in logged and "rpa_PASTED000" not in logged


def test_an_ntfy_topic_and_token_come_from_ssm_only(
    account: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a public ntfy server the topic is the password: it is a secret like BARK_URL."""
    account.put_secret("NTFY_URL", "https://ntfy.sh/reaper-from-ssm")
    settings = Flat(
        lambda_settings(
            env(NTFY_URL="https://ntfy.sh/pasted-topic", NTFY_TOKEN="tk_pastedtoken"),
            client=account.ssm,
        )
    )
    assert settings.ntfy_url == "https://ntfy.sh/reaper-from-ssm"
    assert not settings.ntfy_token
    logged = capsys.readouterr().err
    assert "NTFY_URL" in logged and "NTFY_TOKEN" in logged
    assert "pasted-topic" not in logged and "tk_pastedtoken" not in logged


def test_a_missing_required_parameter_names_the_parameter(account: Account) -> None:
    with pytest.raises(ConfigError) as raised:
        lambda_settings(env(), required=["REAPER_PING_KEY"], client=account.ssm)
    assert str(raised.value).startswith(f"{PREFIX}REAPER_PING_KEY: missing")


def test_no_provider_key_names_both_parameters(account: Account) -> None:
    account.put_secret("REAPER_PING_KEY", PING_KEY)
    with pytest.raises(ConfigError) as raised:
        lambda_settings(env(), provider_keys=True, client=account.ssm)
    message = str(raised.value)
    assert f"{PREFIX}RUNPOD_API_KEY / {PREFIX}VAST_API_KEY" in message
    assert "set at least one" in message


def test_a_malformed_secret_names_the_parameter_not_its_value(account: Account) -> None:
    account.put_secret("BARK_URL", "not a url SECRETDEVICEKEY")
    with pytest.raises(ConfigError) as raised:
        lambda_settings(env(), client=account.ssm)
    assert raised.value.variable == f"{PREFIX}BARK_URL"
    assert "SECRETDEVICEKEY" not in log.redact(str(raised.value))


def test_parameters_are_cached_for_warm_invocations(account: Account) -> None:
    account.put_secret("REAPER_PING_KEY", PING_KEY)
    ssm, clock = CountingSSM(account.ssm), Clock()
    assert load_secrets(PREFIX, client=ssm, now=clock)["REAPER_PING_KEY"] == PING_KEY
    account.put_secret("REAPER_PING_KEY", "rotated-key-0000")
    clock.now += CACHE_SECONDS - 1
    assert load_secrets(PREFIX, client=ssm, now=clock)["REAPER_PING_KEY"] == PING_KEY
    assert ssm.calls == 1, "a warm invocation within the cache time makes no SSM call"
    clock.now += 1
    assert load_secrets(PREFIX, client=ssm, now=clock)["REAPER_PING_KEY"] == "rotated-key-0000"
    assert ssm.calls == 2, "a rotated key takes effect once the cache expires"


def test_every_page_of_parameters_is_read(account: Account) -> None:
    """GetParametersByPath answers at most 10 a page; unknown names are skipped, logged."""
    for n in range(12):
        account.ssm.put_parameter(Name=f"{PREFIX}OTHER_{n:02d}", Value="x", Type="String")
    account.put_secret("VAST_API_KEY", "vast-key-last-page")
    values = load_secrets(PREFIX, client=account.ssm)
    assert values == {"VAST_API_KEY": "vast-key-last-page"}


def test_other_stages_are_not_read(account: Account) -> None:
    account.ssm.put_parameter(
        Name="/reaper/other/REAPER_PING_KEY", Value="other-stage", Type="SecureString"
    )
    account.ssm.put_parameter(
        Name=f"{PREFIX}nested/REAPER_PING_KEY", Value="nested", Type="SecureString"
    )
    assert load_secrets(PREFIX, client=account.ssm) == {}


class DeniedSSM:
    def get_parameters_by_path(self, **kwargs: Any) -> Any:
        from botocore.exceptions import ClientError

        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": f"no access to {PING_KEY}"}},
            "GetParametersByPath",
        )


def test_an_ssm_failure_is_a_config_error_without_the_message() -> None:
    with pytest.raises(ConfigError) as raised:
        load_secrets("/reaper/denied/", client=DeniedSSM())
    assert str(raised.value) == (
        "/reaper/denied/: cannot read the SSM parameters (AccessDeniedException)"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("/reaper/prod/", "/reaper/prod/"), ("/reaper/prod", "/reaper/prod/"), (" /a/ ", "/a/")],
)
def test_prefixes(raw: str, expected: str) -> None:
    assert normalise_prefix(raw) == expected


@pytest.mark.parametrize("raw", [None, "", "reaper/prod", "/", "/re aper/"])
def test_bad_prefixes_are_config_errors(raw: str | None) -> None:
    with pytest.raises(ConfigError) as raised:
        normalise_prefix(raw)
    assert raised.value.variable == "REAPER_SSM_PREFIX"


def test_the_clients_lambda_builds_reach_the_region(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside the shared test clients: the functions' own SSM and DynamoDB clients, built
    from the Lambda environment (AWS_REGION), read what was put."""
    from moto import mock_aws

    from reaper.app import ssm as secrets
    from reaper.store import dynamodb
    from tests.aws_support import AWS_ENV

    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        ssm = secrets.make_client()
        ssm.put_parameter(Name=f"{PREFIX}REAPER_PING_KEY", Value=PING_KEY, Type="SecureString")
        assert secrets.fetch_parameters(PREFIX, ssm) == {"REAPER_PING_KEY": PING_KEY}
        client = dynamodb.make_client()
        dynamodb.create_table("t-real", client)
        store = dynamodb.DynamoDBStore("t-real")
        assert store.claim_alert("k", datetime.now(UTC), timedelta(minutes=1)) is True

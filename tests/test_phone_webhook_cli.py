"""`reaper telegram-webhook [--delete]` (and `invoke telegram-webhook`): setWebhook with
`<REAPER_PUBLIC_URL>/telegram/<secret>` and the secret as secret_token, deleteWebhook to go back
to long polling; a missing setting is one line and exit 2; the secret is never printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reaper.interfaces.cli import main
from tests.fakes.telegram import FAKE_CHAT, FAKE_TOKEN, TelegramFake

SECRET = "whsec_0123456789abcdefghijklmnopqrstuv"


@pytest.fixture
def telegram(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TelegramFake]:
    monkeypatch.chdir(tmp_path)
    for name in ("RUNPOD_API_KEY", "VAST_API_KEY", "BARK_URL", "NTFY_URL"):
        monkeypatch.delenv(name, raising=False)
    with TelegramFake() as fake:
        monkeypatch.setenv("TELEGRAM_BOT_TOKEN", FAKE_TOKEN)
        monkeypatch.setenv("TELEGRAM_CHAT_ID", FAKE_CHAT)
        monkeypatch.setenv("TELEGRAM_API_URL", fake.url)
        monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", SECRET)
        monkeypatch.setenv("REAPER_PUBLIC_URL", "https://reaper.example/")
        yield fake


def test_it_registers_the_webhook_with_its_secret(
    telegram: TelegramFake, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["telegram-webhook"]) == 0
    assert telegram.webhook == {
        "url": f"https://reaper.example/telegram/{SECRET}",
        "secret_token": SECRET,
        "allowed_updates": ["callback_query"],
    }
    out, err = capsys.readouterr()
    assert (
        out
        == "webhook set: https://reaper.example/telegram/*** (the secret also rides in a header)\n"
    )
    assert SECRET not in out + err


def test_delete_goes_back_to_long_polling(
    telegram: TelegramFake, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["telegram-webhook"]) == 0
    assert main(["telegram-webhook", "--delete"]) == 0
    assert telegram.webhook is None
    assert "long-polls getUpdates" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("unset", "line"),
    [
        (
            "TELEGRAM_WEBHOOK_SECRET",
            "reaper: TELEGRAM_WEBHOOK_SECRET: required: the secret Telegram sends with every"
            " update (openssl rand -hex 32)\n",
        ),
        (
            "REAPER_PUBLIC_URL",
            "reaper: REAPER_PUBLIC_URL: required as an https:// URL: Telegram posts updates"
            " only to https\n",
        ),
    ],
)
def test_a_missing_setting_is_one_line_and_exit_2(
    telegram: TelegramFake,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    unset: str,
    line: str,
) -> None:
    monkeypatch.delenv(unset)
    assert main(["telegram-webhook"]) == 2
    assert capsys.readouterr().err == line
    assert telegram.webhook_calls == []


def test_a_loopback_public_url_cannot_take_a_webhook(
    telegram: TelegramFake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REAPER_PUBLIC_URL", "http://127.0.0.1:8080")
    assert main(["telegram-webhook"]) == 2
    assert "REAPER_PUBLIC_URL" in capsys.readouterr().err


def test_no_bot_is_one_line(
    telegram: TelegramFake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("TELEGRAM_BOT_TOKEN", "TELEGRAM_CHAT_ID", "TELEGRAM_WEBHOOK_SECRET"):
        monkeypatch.delenv(name)
    assert main(["telegram-webhook"]) == 2
    assert capsys.readouterr().err.startswith("reaper: TELEGRAM_BOT_TOKEN: required")


def test_telegram_refusing_is_exit_1_with_its_words(
    telegram: TelegramFake, capsys: pytest.CaptureFixture[str]
) -> None:
    telegram.fail(400, description="Bad Request: bad webhook: Failed to resolve host")
    assert main(["telegram-webhook"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "reaper: Telegram refused: setWebhook: HTTP 400: Bad Request: bad webhook: Failed to"
        " resolve host\n"
    )
    assert FAKE_TOKEN not in err


def test_the_invoke_task_runs_the_same_command(telegram: TelegramFake) -> None:
    from invoke.context import Context

    import tasks

    tasks.telegram_webhook(Context())
    assert telegram.webhook is not None and telegram.webhook["secret_token"] == SECRET

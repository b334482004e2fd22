"""`reaper serve`'s long poll for presses: offsets confirm what was handled, a failing
`getUpdates` backs off and recovers, a webhook set for the bot is said, a stop ends a long poll
at once, and pings are answered while a poll is pending."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path

from reaper.channels.telegram.bot import TelegramBot
from reaper.channels.telegram.inbound import Poller
from reaper.channels.telegram.send import TelegramSettings
from reaper.interfaces.serve import press_jobs
from tests.heartbeat_support import KEY, served
from tests.log_support import json_log
from tests.phone_support import Phone, phone, with_webhook
from tests.settings_support import replaced


def _bot(p: Phone) -> TelegramBot:
    telegram = p.settings.channel("telegram")
    assert isinstance(telegram, TelegramSettings)
    return TelegramBot(telegram)


def _events(stream: io.StringIO, name: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]
    return [line for line in lines if line["event"] == name]


def test_offsets_confirm_what_was_handled(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()
        first = p.telegram.press(message, "Keep 1 day")
        store = p.w.store()
        poller = Poller(p.context(store), _bot(p), poll_seconds=0)
        asyncio.run(poller.poll_once())
        assert poller.offset == first["update_id"] + 1
        second = p.telegram.press(message, "Keep 1 week")
        asyncio.run(poller.poll_once())
        asyncio.run(poller.poll_once())
        store.close()
        assert poller.handled == 2, "a confirmed update is never handled twice"
        assert [poll.get("offset") for poll in p.telegram.polls] == [
            None,
            first["update_id"] + 1,
            second["update_id"] + 1,
        ]
        assert p.telegram.pending_updates() == 0
        assert p.telegram.polls[0]["allowed_updates"] == ["callback_query"]


def test_a_failing_get_updates_backs_off_and_recovers(tmp_path: Path) -> None:
    with phone(tmp_path) as p, json_log() as stream:
        assert p.telegram is not None
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        p.telegram.press(p.warning_message(), "Keep 1 day")
        p.telegram.fail(502, times=3)
        store = p.w.store()
        poller = Poller(p.context(store), _bot(p), poll_seconds=0, backoff_base=0.01)

        async def until_handled() -> None:
            task = asyncio.create_task(poller.run())
            for _ in range(500):
                if poller.handled:
                    break
                await asyncio.sleep(0.01)
            poller.interrupt()
            await asyncio.wait_for(task, 5)

        asyncio.run(until_handled())
        store.close()
        failures = _events(stream, "telegram_poll")
        assert [f["retry_in"] for f in failures] == [0.01, 0.02, 0.04]
        assert all("HTTP 502" in str(f["error"]) for f in failures)
        assert poller.handled == 1 and len(p.actions()) == 1
        assert p.telegram.token not in stream.getvalue()


def test_a_webhook_set_for_the_bot_is_said(tmp_path: Path) -> None:
    with phone(tmp_path) as p, json_log() as stream:
        assert p.telegram is not None
        p.telegram.webhook = {"url": "https://elsewhere.example/hook"}
        store = p.w.store()
        poller = Poller(p.context(store), _bot(p), poll_seconds=0, backoff_base=0.01)

        async def until_said() -> None:
            task = asyncio.create_task(poller.run())
            # Until the refusal is in the log (a fixed wait lost the race on a loaded machine).
            for _ in range(1000):
                if _events(stream, "telegram_poll"):
                    break
                await asyncio.sleep(0.01)
            poller.interrupt()
            await asyncio.wait_for(task, 5)

        asyncio.run(until_said())
        store.close()
        [first, *_] = _events(stream, "telegram_poll")
        assert "HTTP 409" in str(first["error"])
        assert "reaper telegram-webhook --delete" in str(first["error"])


def test_a_stop_ends_a_long_poll_at_once(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        store = p.w.store()
        poller = Poller(p.context(store), _bot(p), poll_seconds=5)

        async def stop_soon() -> float:
            task = asyncio.create_task(poller.run())
            # Until the long poll is under way at the fake Telegram.
            for _ in range(1000):
                if p.telegram is not None and p.telegram.polls:
                    break
                await asyncio.sleep(0.01)
            started = time.monotonic()
            poller.interrupt()
            await asyncio.wait_for(task, 5)
            return time.monotonic() - started

        assert asyncio.run(stop_soon()) < 1.0
        store.close()


def test_pings_are_answered_while_a_poll_waits(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        settings = replaced(p.settings, ping_key=KEY)
        store = p.w.store()
        jobs = press_jobs(settings, store, p.notifier(), p.w.clock)
        assert [j.name for j in jobs] == ["telegram"]
        with served(settings, clock=p.w.clock, jobs=jobs) as app:
            for _ in range(100):
                if p.telegram.polls:
                    break
                time.sleep(0.02)
            assert p.telegram.polls, "the long poll is under way"
            started = time.monotonic()
            assert app.ping("trainer-1").status_code == 200
            assert time.monotonic() - started < 0.5
            stopping = time.monotonic()
        assert time.monotonic() - stopping < 3.0, "a stop does not wait for the long poll"
        store.close()


def test_the_poll_runs_only_without_a_webhook_secret(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        clock, notifier = p.w.clock, p.notifier()
        store = p.w.store()
        assert len(press_jobs(p.settings, store, notifier, clock)) == 1
        assert press_jobs(with_webhook(p.settings), store, notifier, clock) == []
        bare = replaced(p.settings, telegram_bot_token=None, telegram_chat_id=None)
        assert press_jobs(bare, store, notifier, clock) == []
        store.close()

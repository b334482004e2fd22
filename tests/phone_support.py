"""A world for the actions-from-the-phone tests: the provider emulators, a fake Telegram (and
ntfy and Bark when asked), a real notifier over them, the app on loopback for `/act` and
`/telegram`, and the press loop of `reaper serve`, all on one SQLite file and one FakeClock."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from reaper.app import wiring
from reaper.app.wiring import make_notifier
from reaper.channels.base import ChannelOptions, Notifier
from reaper.channels.telegram.bot import TelegramBot
from reaper.channels.telegram.inbound import Poller
from reaper.channels.telegram.send import TelegramSettings
from reaper.core.models import ActionRecord
from reaper.passes.act import ActContext
from reaper.passes.reap import ReapReport
from reaper.settings.model import Settings
from reaper.store.sqlite import SQLiteStore
from tests.fakes.bark import BarkFake
from tests.fakes.ntfy import NtfyFake
from tests.fakes.telegram import FAKE_CHAT, FAKE_TOKEN, Message, TelegramFake
from tests.fakes.webhook import WebhookReceiver
from tests.heartbeat_support import Served, served
from tests.reap_support import FAST_CONFIRM, FAST_HTTP, World, world

PUBLIC = "https://reaper.example"
WEBHOOK_SECRET = "hook-secret_0123456789abcdefABCDEF"
FAST_CHANNEL = ChannelOptions(timeout=2.0, max_attempts=2, backoff_base=0.01, deadline=5.0)


def with_webhook(settings: Settings, secret: str | None = WEBHOOK_SECRET) -> Settings:
    channels = tuple(
        dataclasses.replace(c, webhook_secret=secret) if isinstance(c, TelegramSettings) else c
        for c in settings.channels
    )
    return dataclasses.replace(settings, channels=channels)


@dataclass
class Phone:
    w: World
    telegram: TelegramFake | None
    ntfy: NtfyFake | None
    bark: BarkFake | None

    @property
    def settings(self) -> Settings:
        return self.w.settings

    def notifier(self) -> Notifier:
        return make_notifier(self.settings, options=FAST_CHANNEL)

    def run(self, **kwargs: Any) -> ReapReport:
        """A reap pass whose alerts go out through the real channels to the fakes."""
        return self.w.run(notifier=self.notifier(), **kwargs)

    def warn(self) -> ReapReport:
        """The stopped instances first seen now, then warned 23 hours later."""
        self.run()
        self.w.advance(23)
        return self.run()

    def to_deadline(self) -> ReapReport:
        """The clock to the deadline of the warned instances, and the pass there."""
        self.w.advance(1)
        return self.run()

    def context(self, store: SQLiteStore, settings: Settings | None = None) -> ActContext:
        return wiring.act_context(
            settings or self.settings,
            store,
            self.notifier(),
            self.w.clock,
            http=FAST_HTTP,
            confirm=FAST_CONFIRM,
        )

    def poll(self, settings: Settings | None = None) -> Poller:
        """One round of `reaper serve`'s long poll: getUpdates, then each press answered."""
        settings = settings or self.settings
        telegram = settings.channel("telegram")
        assert isinstance(telegram, TelegramSettings)
        store = self.w.store()
        try:
            poller = Poller(self.context(store, settings), TelegramBot(telegram), poll_seconds=0)
            asyncio.run(poller.poll_once())
        finally:
            store.close()
        return poller

    def warning_message(self) -> Message:
        assert self.telegram is not None
        warnings = [m for m in self.telegram.messages if "will be terminated" in m.text]
        assert warnings, [m.text for m in self.telegram.messages]
        return self.telegram.message(warnings[-1].message_id)

    def actions(self) -> list[ActionRecord]:
        store = self.w.store()
        try:
            return store.action_log()
        finally:
            store.close()

    @contextmanager
    def served(self, settings: Settings | None = None) -> Iterator[Served]:
        """The app on loopback over the world's state and clock (for /act and /telegram)."""
        with served(settings or self.settings, notifier=self.notifier(), clock=self.w.clock) as app:
            app.running.asgi.app.act_http = FAST_HTTP
            yield app


@contextmanager
def telegram_beside_webhook(
    tmp_path: Path,
) -> Iterator[tuple[TelegramFake, WebhookReceiver, World]]:
    """A world whose person channel is Telegram (a fake the test can break) and whose plain
    webhook beside it reaches no person."""
    with (
        TelegramFake() as telegram,
        WebhookReceiver() as hook,
        world(
            tmp_path,
            telegram_bot_token=FAKE_TOKEN,
            telegram_chat_id=FAKE_CHAT,
            telegram_api_url=telegram.url,
            webhook_url=hook.webhook_url,
        ) as w,
    ):
        yield telegram, hook, w


def link_path(link: str) -> str:
    """`/act/<token>` of an action link (the public URL's host is not the test server)."""
    return urlsplit(link).path


@contextmanager
def phone(
    tmp_path: Path,
    *,
    telegram: bool = True,
    ntfy: bool = False,
    bark: bool = False,
    public_url: str | None = PUBLIC,
    **overrides: Any,
) -> Iterator[Phone]:
    with ExitStack() as stack:
        fake_telegram = stack.enter_context(TelegramFake()) if telegram else None
        fake_ntfy = stack.enter_context(NtfyFake()) if ntfy else None
        fake_bark = stack.enter_context(BarkFake()) if bark else None
        channels: dict[str, Any] = {}
        if fake_telegram is not None:
            channels |= {
                "telegram_bot_token": FAKE_TOKEN,
                "telegram_chat_id": FAKE_CHAT,
                "telegram_api_url": fake_telegram.url,
            }
        if fake_ntfy is not None:
            channels["ntfy_url"] = fake_ntfy.topic_url
        if fake_bark is not None:
            channels["bark_url"] = fake_bark.bark_url
        w = stack.enter_context(world(tmp_path, public_url=public_url, **channels, **overrides))
        yield Phone(w, fake_telegram, fake_ntfy, fake_bark)


def http_post(app: Served, path: str, **kwargs: Any) -> httpx.Response:
    return app.http.post(path, **kwargs)

"""Every provider and channel request names the tool in its User-Agent: one v2 client measured
a 403 from RunPod for a default library agent (Cloudflare's error 1010)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from reaper import USER_AGENT, __version__
from reaper.app.wiring import make_notifier
from reaper.core.models import Alert
from tests.fakes.bark import BarkFake
from tests.fakes.telegram import TelegramFake
from tests.reap_support import world
from tests.settings_support import settings as settings_of


def test_provider_requests_carry_the_reaper_agent(tmp_path: Path) -> None:
    assert f"reaper/{__version__}" == USER_AGENT
    with world(tmp_path) as w:
        w.runpod.add_pod(status="EXITED")
        w.vast.add_instance(actual_status="stopped")
        w.reach_deadline()
        w.run()
        requests = w.runpod.requests + w.vast.requests
        assert {r.kind for r in requests} >= {"list", "delete", "balance"}
        assert {r.user_agent for r in requests} == {USER_AGENT}


def test_channel_requests_carry_the_reaper_agent() -> None:
    with TelegramFake() as telegram, BarkFake() as bark:
        settings = settings_of(
            telegram_bot_token=telegram.token,
            telegram_chat_id=telegram.chat_id,
            telegram_api_url=telegram.url,
            bark_url=bark.bark_url,
        )
        deliveries = asyncio.run(make_notifier(settings).send(Alert(title="t", body="b")))
        assert all(d.ok for d in deliveries)
        agents = {r.headers.get("user-agent") for r in telegram.requests + bark.requests}
        assert agents == {USER_AGENT}

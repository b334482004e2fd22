"""Which actions an alert offers, and how each channel shows them: a warning's keep 1 day, keep
1 week and terminate now (Telegram buttons, ntfy buttons, Bark's page), a folded warning's
"keep all" and per-instance actions up to each channel's limit, the watchdog's mute and status
page; links only with REAPER_PUBLIC_URL; handles stored hashed, 24 hours, one use."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from reaper.app.wiring import make_notifier
from reaper.core import messages
from reaper.core.models import Alert, Instance
from reaper.passes.arm import CALLBACK_PREFIX, GRANT_TTL, arm_safely
from tests.phone_support import PUBLIC, link_path, phone
from tests.settings_support import settings as settings_of

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_a_warning_carries_keep_and_terminate_on_every_channel(tmp_path: Path) -> None:
    with phone(tmp_path, ntfy=True, bark=True) as p:
        assert p.telegram and p.ntfy and p.bark
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()
        data = [b["callback_data"] for row in message.keyboard for b in row]
        assert all(d.startswith(CALLBACK_PREFIX) and len(d.encode()) <= 64 for d in data)
        assert len(set(data)) == 3
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        assert [a["label"] for a in published.actions] == [
            "Keep 1 day",
            "Keep 1 week",
            "Terminate now…",
        ]
        [push] = [x for x in p.bark.pushes if "will be terminated" in x["title"]]
        assert push["url"].startswith(f"{PUBLIC}/act/")

        store = p.w.store()
        for callback in data:
            token = callback.removeprefix(CALLBACK_PREFIX)
            grant = store.get_grant(hashlib.sha256(token.encode()).hexdigest())
            assert grant is not None and grant.used_at is None
            assert grant.expires_at - grant.created_at == GRANT_TTL
            [choice] = grant.choices
            assert choice.targets == (f"runpod:{pod}",)
            assert grant.ask_first == (choice.kind == "terminate")
            assert choice.callback is None and choice.link is None, "grants hold no handle"
        menu = store.get_grant(
            hashlib.sha256(link_path(push["url"]).removeprefix("/act/").encode()).hexdigest()
        )
        store.close()
        assert menu is not None
        assert [c.label for c in menu.choices] == ["Keep 1 day", "Keep 1 week", "Terminate now"]
        assert not menu.ask_first, "the page itself asks"


def test_without_a_public_url_only_the_chat_buttons_remain(tmp_path: Path) -> None:
    with phone(tmp_path, ntfy=True, bark=True, public_url=None) as p:
        assert p.telegram and p.ntfy and p.bark
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        assert p.warning_message().labels == ["Keep 1 day", "Keep 1 week", "Terminate now"]
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        assert "actions" not in published.payload
        [push] = [x for x in p.bark.pushes if "will be terminated" in x["title"]]
        assert "/act/" not in push.get("url", "")


def test_a_folded_warning_offers_keep_all_and_each_instance_up_to_the_limit(
    tmp_path: Path,
) -> None:
    with phone(tmp_path, ntfy=True) as p:
        assert p.telegram and p.ntfy
        pods = [p.w.runpod.add_pod(status="EXITED", name=f"job-{i}") for i in range(12)]
        p.warn()
        [fold] = [m for m in p.telegram.messages if "12 stopped instances" in m.text]
        labels = fold.labels
        assert labels[0] == "Keep all 1 day"
        assert len(labels) == 1 + 2 * messages.FOLD_ACTION_INSTANCES
        assert labels[1:3] == ["Keep job-0 1 day", "Terminate job-0"]
        [published] = [x for x in p.ntfy.published if "12 stopped" in x.payload["title"]]
        assert [a["label"] for a in published.actions] == [
            "Keep all 1 day",
            "Keep job-0 1 day",
            "Terminate job-0…",
        ]

        p.telegram.press(fold, "Keep all 1 day")
        p.poll()
        assert p.telegram.answers[0]["text"].startswith("Kept 12 stopped instances until ")
        store = p.w.store()
        assert set(store.history().kept) == {f"runpod:{pod}" for pod in pods}
        store.close()
        report = p.to_deadline()
        assert {a.action for a in report.actions} == {"protect"}
        assert p.w.runpod.mutations == []


def test_observe_mode_offers_no_terminate(tmp_path: Path) -> None:
    with phone(tmp_path, mode="observe") as p:
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        warning = (
            [m for m in p.telegram.messages if "would be terminated" in m.text]
            if p.telegram
            else []
        )
        assert warning and warning[0].labels == ["Keep 1 day", "Keep 1 week"]


def test_a_dry_run_arms_nothing(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.run()
        p.w.advance(23)
        report = p.run(dry_run=True)
        assert [a.action for a in report.actions] == ["warn"]
        assert p.telegram is not None and p.telegram.messages == []


class _FailingStore:
    def add_grant(self, grant: Any) -> None:
        raise OSError("disk full")


def test_a_store_that_fails_while_arming_costs_the_actions_not_the_alert() -> None:
    settings = settings_of(telegram_bot_token="1:x", telegram_chat_id="1", public_url=PUBLIC)
    inst = Instance(
        provider="runpod", account="a", id="abc", name="n", state="stopped", raw_status="EXITED"
    )
    alert = messages.termination_warning(
        inst, NOW + timedelta(hours=1), NOW, "reaper:keep", next_check=NOW + timedelta(hours=1)
    )
    assert alert.actions
    room = make_notifier(settings).actions
    armed = arm_safely(alert, _FailingStore(), settings, NOW, room)  # type: ignore[arg-type]
    assert armed.actions == () and armed.menu is None
    assert armed.title == alert.title


def test_the_watchdog_alerts_offer_mute_and_the_status_page() -> None:
    inst = Instance(
        provider="runpod", account="a", id="abc", name="n", state="running", raw_status="RUNNING"
    )
    for alert in (
        messages.monitor_down("trainer-1", NOW, NOW + timedelta(minutes=6)),
        messages.monitor_still_down("trainer-1", NOW, NOW + timedelta(hours=2)),
        messages.watchdog_silent_billing("runpod-abc", inst, NOW),
    ):
        kinds = [(a.kind, a.targets) for a in alert.actions]
        assert kinds[0][0] == "mute" and kinds[1] == ("open", ())
    assert all(a.kind != "terminate" for a in messages.monitor_down("h", None, NOW).actions)


def test_alerts_without_a_choice_carry_no_actions() -> None:
    for alert in (messages.test_message(), messages.reaper_silent(None, NOW), Alert(title="t")):
        assert alert.actions == ()

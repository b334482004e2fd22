"""`POST /alert/<key>/<host>`: an instance's message for one host, marked as the instance's
(`📟 <host>: …`, never reaper's own words or action links), with its own budget; an
`idle_soon` warning carries Keep 1 hour / Keep 1 day, and a press keeps that host, which the
instance reads back on its next ping."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from reaper.core.units import iso
from reaper.interfaces.api import Limits
from reaper.interfaces.ratelimit import Rate
from tests.heartbeat_support import KEY, WIDE, Served, make_settings, served
from tests.phone_support import phone

IDLE = {"kind": "idle_soon", "text": "runpod-abc: idle 15 min\nnvidia-smi 0%"}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Served]:
    with served(make_settings(tmp_path)) as s:
        yield s


def test_the_host_is_in_the_title_once(app: Served) -> None:
    url = f"/alert/{KEY}/runpod-abc"
    sent = app.http.post(url, json={"title": "runpod-abc: job FAILED (exit 3)", "body": "oom"})
    assert sent.status_code == 200
    assert app.http.post(url, json={"text": "disk full"}).status_code == 200
    titles = [a.title for a in app.notifier.alerts]
    assert titles == ["📟 runpod-abc: job FAILED (exit 3)", "📟 runpod-abc: disk full"]


def test_a_forged_warning_reads_as_the_instances_without_links(app: Served) -> None:
    forged = {
        "title": "⚠️ runpod-xyz will be TERMINATED in 1h",
        "body": "Keep it: https://reaper.example/act/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA now",
    }
    assert app.http.post(f"/alert/{KEY}/vast-1", json=forged).status_code == 200
    assert app.http.post(f"/alert/{KEY}", json=forged).status_code == 200
    by_host, plain = app.notifier.alerts
    assert by_host.title == "📟 vast-1: ⚠️ runpod-xyz will be TERMINATED in 1h"
    assert plain.title == "📟 instance: ⚠️ runpod-xyz will be TERMINATED in 1h"
    for alert in (by_host, plain):
        assert "/act/" not in alert.body and alert.actions == () and alert.url is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"kind": "reboot", "text": "x"}, '"kind"'),
        ({"kind": "idle_soon", "text": "x"}, '"destroy_at"'),
        ({"kind": "idle_soon", "text": "x", "destroy_at": "soon"}, '"destroy_at"'),
        ({"kind": "idle_soon", "text": "x", "destroy_at": 5}, '"destroy_at"'),
    ],
)
def test_a_bad_kind_or_destroy_at_is_one_line_400(
    app: Served, body: dict[str, object], says: str
) -> None:
    answer = app.http.post(f"/alert/{KEY}/runpod-abc", json=body)
    assert answer.status_code == 400 and says in answer.text and answer.text.count("\n") == 1
    assert app.notifier.alerts == []
    assert app.http.post(f"/alert/{KEY}/bad..host!", json={"text": "x"}).status_code == 400


def test_one_noisy_host_never_makes_another_wait(tmp_path: Path) -> None:
    tight = Limits(per_client=WIDE.per_client, per_host=WIDE.per_host, alerts=Rate(30, 0.01))
    with served(make_settings(tmp_path), limits=tight) as app:
        noisy = [
            app.http.post(f"/alert/{KEY}/junk-1", json={"text": f"spam {n}"}).status_code
            for n in range(31)
        ]
        assert noisy[:30] == [200] * 30 and noisy[30] == 429
        oom = app.http.post(f"/alert/{KEY}/runpod-real", json={"text": "CUDA OOM"})
        assert oom.status_code == 200
        assert app.http.post(f"/alert/{KEY}", json={"text": "plain route"}).status_code == 200


def test_a_keep_pressed_on_the_idle_warning_reaches_the_next_ping(tmp_path: Path) -> None:
    with phone(tmp_path, ping_key=KEY) as p, p.served() as app:
        assert p.telegram is not None
        app.ping("runpod-abc")
        destroy_at = p.w.clock.now() + timedelta(minutes=5)
        answer = app.http.post(
            f"/alert/{KEY}/runpod-abc", json={**IDLE, "destroy_at": iso(destroy_at)}
        )
        assert answer.status_code == 200, answer.text
        message = p.telegram.last_message()
        assert message.text.splitlines()[0].endswith("📟 runpod-abc: idle 15 min")
        assert message.labels[:2] == ["Keep 1 hour", "Keep 1 day"]

        p.telegram.press(message, "Keep 1 hour")
        pressed_at = p.w.clock.now()
        assert p.poll().handled == 1

        reply = app.ping("runpod-abc", method="POST", headers={"accept": "application/json"})
        assert json.loads(reply.text)["keep_until"] == iso(pressed_at + timedelta(hours=1))
        [record] = [a for a in p.actions() if a.kind == "keep"]
        assert (record.subject, record.via, record.done) == ("runpod-abc", "chat button", True)


def test_a_keep_pressed_for_a_deleted_monitor_says_so(tmp_path: Path) -> None:
    with phone(tmp_path, ping_key=KEY) as p, p.served() as app:
        assert p.telegram is not None
        app.ping("runpod-gone")
        destroy_at = iso(p.w.clock.now() + timedelta(minutes=5))
        app.http.post(f"/alert/{KEY}/runpod-gone", json={**IDLE, "destroy_at": destroy_at})
        app.store.delete_monitor("runpod-gone")
        p.telegram.press(p.telegram.last_message(), "Keep 1 day")
        assert p.poll().handled == 1
        [answer] = p.telegram.answers
        assert answer["text"] == "Not kept: there is no monitor runpod-gone (deleted meanwhile?)."
        assert app.store.get_monitor("runpod-gone") is None

"""Issue 24.5: an instance whose protection cannot be read counts as protected — and once it is
past its deadline that is said: an alert once per episode naming the field that cannot be read
and what it bills, "needs you" on the status page, and exit 1 while it lasts. A deliberate
protection (the marker, the lock, `reaper keep`) is not an exemption: exit 0, no alert."""

from __future__ import annotations

import re
from pathlib import Path

from tests.heartbeat_support import ADMIN, KEY, served
from tests.reap_support import World, action_of, events, world
from tests.settings_support import replaced


def _needs_you(w: World) -> list[str]:
    return [f"{a.title}\n{a.body}" for a in w.notifier.alerts if a.event == "needs_you"]


def test_a_pod_whose_name_cannot_be_read_is_named_at_its_deadline(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", volume_gb=50)
        w.runpod.modify_pod(pod, name=None)
        w.run()
        w.advance(23)
        assert w.run().exit_code == 0, "before its deadline it is only protected"
        assert _needs_you(w) == []
        w.advance(1)
        report = w.run()
        assert action_of(report, pod) == "protect"
        (action,) = [a for a in report.actions if a.id == pod]
        assert action.exempt == "unreadable_protection"
        assert report.exit_code == 1
        (alert,) = _needs_you(w)
        assert f"runpod:{pod}" in alert and "`name`" in alert
        assert "$0.014/h" in alert and "$10.00/month" in alert
        for _ in range(5):
            w.advance(1)
            assert w.run().exit_code == 1
        assert len(_needs_you(w)) == 1, "once per episode"
        assert w.runpod.mutations == []


def test_a_vast_answer_without_a_label_names_the_label(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped")
        w.vast.add_instance(actual_status="running")
        w.vast.drop_field(inst, "label")
        w.reach_deadline()
        report = w.run()
        assert action_of(report, str(inst)) == "protect" and report.exit_code == 1
        (alert,) = _needs_you(w)
        assert f"vast:{inst}" in alert and "`label`" in alert


def test_a_deliberate_protection_is_no_exemption(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        marked = w.runpod.add_pod(status="EXITED", name="keep me reaper:keep")
        locked = w.runpod.add_pod(status="EXITED", locked=True)
        w.reach_deadline()
        report = w.run()
        assert action_of(report, marked) == "protect" and action_of(report, locked) == "protect"
        assert all(a.exempt is None for a in report.actions)
        assert report.exit_code == 0
        assert "needs_you" not in events(w.notifier)


def test_the_episode_ends_when_the_name_can_be_read_again(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.runpod.modify_pod(pod, name=None)
        w.reach_deadline()
        assert w.run().exit_code == 1
        w.runpod.modify_pod(pod, name="readable reaper:keep")
        w.advance(1)
        assert w.run().exit_code == 0
        w.runpod.modify_pod(pod, name=None)
        w.advance(1)
        assert w.run().exit_code == 1
        assert len(_needs_you(w)) == 2, "a new episode is named again"


def test_the_status_page_lists_it_under_needs_you(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", volume_gb=50)
        w.runpod.modify_pod(pod, name=None)
        fine = w.runpod.add_pod(status="EXITED", name="fine")
        w.reach_deadline()
        w.run()
        settings = replaced(w.settings, admin_key=ADMIN, ping_key=KEY)
        with served(settings, clock=w.clock) as app:
            assert app.http.post("/login", data={"key": ADMIN}).status_code == 303
            page = app.http.get("/").text
            status = app.http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"})
        match = re.search(r'<section class="card" id="needs-you">(.*?)</section>', page, re.S)
        assert match, "a needs-you section"
        section = match.group(1)
        assert pod in section and "`name`" in section and "$0.014/h" in section
        assert fine not in section
        [item] = status.json()["needs_you"]
        assert item["id"] == pod and item["exempt"] == "unreadable_protection"
        assert item["cost_per_hour"] is not None


def test_reaper_status_says_it_needs_you(tmp_path: Path) -> None:
    """`reaper status` reads the store at the real time: the passes ran a day ago and an hour
    ago (by their own clock), and the pod is past its deadline now."""
    from datetime import UTC, datetime, timedelta

    from tests.reap_support import cli

    with world(tmp_path, start=datetime.now(UTC) - timedelta(hours=25)) as w:
        pod = w.runpod.add_pod(status="EXITED", volume_gb=50)
        w.runpod.modify_pod(pod, name=None)
        w.run()
        w.advance(24)
        w.run()
        text = cli(w, "status")
        assert text.returncode == 0, text.stderr
        [line] = [x for x in text.stdout.splitlines() if x.startswith("needs you:")]
        assert f"(runpod:{pod})" in line and "$0.014/h" in line and "`name`" in line

"""`reaper status` never misleads: a protected or kept instance shows as protected with its
reason (not "due" on a date already past), a deadline already past says the next pass acts,
names stand beside ids, and every time is to the minute with UTC stated."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reaper.core.models import KeptInstance
from tests.reap_support import World, cli, world

ISO_OR_MICROSECONDS = re.compile(r"\d\dT\d\d:\d\d|:\d\d\.\d+")


def _fleet(w: World) -> None:
    w.runpod.add_pod("plain-p1", name="sweep-old", status="EXITED", volume_gb=100)
    w.runpod.add_pod("marked-p2", name="cache reaper:keep", status="EXITED", volume_gb=100)
    w.runpod.add_pod("locked-p3", name="prod", status="EXITED", locked=True, volume_gb=10)
    w.runpod.add_pod("kept-p4", name="ablation", status="EXITED", volume_gb=10)
    w.vast.add_instance(7001, label="bid-sweep", actual_status="stopped")


# A channel that reaches a person: deadlines bring terminations (with none, they bring holds).
PHONE = {"NTFY_URL": "http://127.0.0.1:9/phone"}


def _status(w: World) -> tuple[str, dict]:  # type: ignore[type-arg]
    text = cli(w, "status", extra_env=PHONE)
    data = cli(w, "status", "--json", extra_env=PHONE)
    assert text.returncode == 0 and data.returncode == 0, text.stderr + data.stderr
    return text.stdout, json.loads(data.stdout)


def test_protected_and_kept_show_their_reason_never_a_past_due_date(tmp_path: Path) -> None:
    # A pass long ago (the world's clock), read now (the CLI's): every deadline has passed.
    with world(tmp_path) as w:
        _fleet(w)
        store = w.store()
        store.keep(KeptInstance(key="runpod:kept-p4", since=w.clock.now()))
        store.close()
        w.run()
        text, data = _status(w)

    stopped = {s["instance"]: s for s in data["fleet"]["stopped"]}
    assert stopped["runpod:marked-p2"]["protected"] == (
        "name contains the protect marker 'reaper:keep'"
    )
    assert stopped["runpod:locked-p3"]["protected"] == "locked on RunPod"
    assert stopped["runpod:kept-p4"]["protected"].startswith("kept by `reaper keep`")
    for key in ("runpod:marked-p2", "runpod:locked-p3", "runpod:kept-p4"):
        assert stopped[key]["due_at"] is None and stopped[key]["overdue"] is False
    assert stopped["runpod:plain-p1"]["overdue"] is True
    assert stopped["runpod:plain-p1"]["name"] == "sweep-old"
    assert stopped["vast:7001"]["name"] == "bid-sweep"

    rows: dict[str, str] = {}
    for line in text.splitlines():  # the stopped table comes before the kept one
        if line and ":" in line.split()[0]:
            rows.setdefault(line.split()[0], line)
    assert "protected: locked on RunPod" in rows["runpod:locked-p3"]
    assert "protected: name contains the protect marker" in rows["runpod:marked-p2"]
    assert "protected: kept by `reaper keep`" in rows["runpod:kept-p4"]
    assert (
        "past its deadline" in rows["runpod:plain-p1"]
        and "next reap pass" in rows["runpod:plain-p1"]
    )
    assert "sweep-old" in rows["runpod:plain-p1"] and "bid-sweep" in rows["vast:7001"]
    assert not any(line.split()[-1:] == ["due"] for line in text.splitlines())
    assert " due 20" not in text  # no "due <date>" at all: every deadline here is past


def test_a_deadline_ahead_is_scheduled_in_human_time(tmp_path: Path) -> None:
    start = datetime.now(UTC) - timedelta(hours=1)
    with world(tmp_path, start=start) as w:
        w.runpod.add_pod("plain-p1", name="sweep-old", status="EXITED", volume_gb=100)
        w.run()
        text, data = _status(w)
    [item] = data["fleet"]["stopped"]
    assert item["overdue"] is False and item["due_at"] is not None
    [row] = [line for line in text.splitlines() if line.startswith("runpod:plain-p1")]
    assert re.search(r"scheduled \d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 2[23]h\d+m\)", row), row


def test_every_time_in_the_status_text_is_to_the_minute_in_utc(tmp_path: Path) -> None:
    start = datetime.now(UTC) - timedelta(minutes=3)
    with world(tmp_path, start=start) as w:
        _fleet(w)
        w.run()
        store = w.store()
        from reaper.core.models import Monitor

        store.put_monitor(
            Monitor(
                host="runpod-plain-p1",
                status="up",
                created_at=start,
                last_ping_at=start + timedelta(seconds=1, microseconds=123456),
            )
        )
        store.close()
        text, data = _status(w)
    assert ISO_OR_MICROSECONDS.search(text) is None, text
    assert "UTC" in text.splitlines()[0]
    [monitor] = [line for line in text.splitlines() if line.startswith("runpod-plain-p1")]
    assert "sweep-old" in monitor  # the monitor's instance, by name
    assert re.search(r"\d\d:\d\d UTC \(\dm ago\)", monitor), monitor
    assert data["monitors"][0]["name"] == "sweep-old"
    assert text.splitlines()[0].startswith("status at ")

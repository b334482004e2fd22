"""What an instance reads back on its JSON ping — the keep (`reaper keep host:<host>`, or its
instance's keep for a provider host) and the idle limit `reaper idle` set — is shown wherever
its monitor is: `reaper monitor list` (text and `--json`), `reaper status --json`,
`GET /monitors/<host>` and the monitor's page; `keep_until` and `idle_after` in the JSON are
exactly what the ping answers, and the keep says who set it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from reaper.core.monitors import KEEP_FOREVER
from reaper.core.units import iso, utc
from reaper.interfaces import monitor_commands
from reaper.interfaces.commands import status_command
from reaper.passes import keeping
from tests.heartbeat_support import ADMIN, KEY, Served, make_settings, served
from tests.phone_support import phone
from tests.web_support import fleet, page_of

JSON = {"accept": "application/json"}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Served]:
    with served(make_settings(tmp_path)) as s:
        yield s


def _ping_answer(app: Served, host: str) -> dict[str, Any]:
    response = app.ping(host, method="POST", headers=JSON)
    assert response.status_code == 200
    data: dict[str, Any] = json.loads(response.text)
    return data


def _listed(app: Served, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    assert monitor_commands.monitor_list(app.settings, json_output=True, clock=app.clock) == 0
    data = json.loads(capsys.readouterr().out)
    return {m["host"]: m for m in data["monitors"]}


def _set(app: Served, capsys: pytest.CaptureFixture[str]) -> None:
    """h1: kept 3 days by the command line, idle limit 45m; h2: idle never, not kept;
    runpod-abc: its instance kept by the status page, with no end."""
    settings, clock = app.settings, app.clock
    assert monitor_commands.monitor_idle(settings, "h1", after="45m", clock=clock) == 0
    assert (
        monitor_commands.monitor_keep(settings, "h1", duration=timedelta(days=3), clock=clock) == 0
    )
    assert monitor_commands.monitor_idle(settings, "h2", after="never", clock=clock) == 0
    app.ping("runpod-abc")
    now = clock.now()
    keeping.keep(app.store, "runpod:abc", now=now, until=None, by="status page", via="status page")
    capsys.readouterr()


def test_monitor_list_json_carries_what_the_ping_answers(
    app: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    _set(app, capsys)
    listed = _listed(app, capsys)
    for host in ("h1", "h2", "runpod-abc"):
        answer = _ping_answer(app, host)
        assert listed[host]["keep_until"] == answer["keep_until"], host
        assert listed[host]["idle_after"] == answer["idle_after"], host
    h1 = listed["h1"]
    assert h1["keep_until"] == iso(app.clock.now() + timedelta(days=3))
    assert h1["idle_after"] == "45m"
    assert h1["kept_by"].endswith("(command line)") or h1["kept_by"] == "command line"
    assert (listed["h2"]["keep_until"], listed["h2"]["kept_by"]) == (None, None)
    assert listed["h2"]["idle_after"] == "never"
    assert listed["runpod-abc"]["keep_until"] == iso(KEEP_FOREVER)
    assert listed["runpod-abc"]["kept_by"] == "status page"
    assert listed["runpod-abc"]["idle_after"] is None


def test_an_ended_keep_and_an_unkeep_show_nothing(
    app: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, clock = app.settings, app.clock
    monitor_commands.monitor_keep(settings, "h1", duration=timedelta(hours=1), clock=clock)
    monitor_commands.monitor_keep(settings, "h3", duration=timedelta(hours=1), clock=clock)
    monitor_commands.monitor_unkeep(settings, "h3", clock=clock)
    clock.advance(timedelta(hours=2))
    capsys.readouterr()
    listed = _listed(app, capsys)
    for host in ("h1", "h3"):
        assert (listed[host]["keep_until"], listed[host]["kept_by"]) == (None, None)
        assert _ping_answer(app, host)["keep_until"] is None


def test_monitor_list_text_shows_the_keep_and_the_idle_limit(
    app: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    _set(app, capsys)
    assert monitor_commands.monitor_list(app.settings, json_output=False, clock=app.clock) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[-2:] == ["kept", "idle"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert utc(app.clock.now() + timedelta(days=3)) in rows["h1"]
    assert rows["h1"].rstrip().endswith("45m")
    assert rows["h2"].rstrip().endswith("never")
    assert "with no end set" in rows["runpod-abc"]


def test_status_json_and_the_admin_api_carry_them(
    app: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    _set(app, capsys)
    listed = _listed(app, capsys)
    assert status_command(app.settings, json_output=True) in (0, 1)  # the real clock
    status = {m["host"]: m for m in json.loads(capsys.readouterr().out)["monitors"]}
    assert (status["h1"]["idle_after"], status["h2"]["idle_after"]) == ("45m", "never")
    assert status["runpod-abc"]["keep_until"] == iso(KEEP_FOREVER)
    assert status["runpod-abc"]["kept_by"] == "status page"
    response = app.http.get("/monitors/h1", headers={"authorization": f"Bearer {ADMIN}"})
    assert response.status_code == 200
    monitor = response.json()["monitor"]
    for key in ("keep_until", "kept_by", "idle_after"):
        assert monitor[key] == listed["h1"][key], key


def test_the_monitor_page_says_kept_until_by_whom_and_the_idle_limit(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        settings, clock = f.app.settings, f.app.clock
        monitor_commands.monitor_idle(settings, "box-1", after="45m", clock=clock)
        monitor_commands.monitor_keep(settings, "box-1", duration=timedelta(days=3), clock=clock)
        monitor_commands.monitor_idle(settings, "box-2", after="never", clock=clock)
        f.app.ping("box-3")
        page_of(f)  # signs in
        pages = {h: f.http.get(f"/monitor/{h}").text for h in ("box-1", "box-2", "box-3")}
        until = clock.now() + timedelta(days=3)
    line = re.search(r'<span class="line small" id="read-back">(.*?)</span>(?=<)', pages["box-1"])
    assert line is not None
    text = re.sub(r"<[^>]+>", "", line.group(1))
    assert text.startswith(f"kept until {utc(until)} (by ")
    assert "idle limit 45m (set by reaper idle)" in text
    assert f'datetime="{iso(until)}"' in line.group(1)
    assert "no idle destroy (set by reaper idle)" in pages["box-2"]
    assert 'id="read-back"' not in pages["box-3"]  # nothing set: nothing said


def test_a_keep_pressed_on_the_idle_warning_names_who_pressed(tmp_path: Path) -> None:
    with phone(tmp_path, ping_key=KEY) as p, p.served() as app:
        assert p.telegram is not None
        app.ping("runpod-abc")
        destroy_at = p.w.clock.now() + timedelta(minutes=5)
        warning = {
            "kind": "idle_soon",
            "text": "runpod-abc: idle 15 min",
            "destroy_at": iso(destroy_at),
        }
        assert app.http.post(f"/alert/{KEY}/runpod-abc", json=warning).status_code == 200
        p.telegram.press(p.telegram.last_message(), "Keep 1 hour")
        assert p.poll().handled == 1
        [record] = [a for a in p.actions() if a.kind == "keep"]
        monitor = app.store.get_monitor("runpod-abc")
        assert monitor is not None and monitor.keep_by == record.by != ""

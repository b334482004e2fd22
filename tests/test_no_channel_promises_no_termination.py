"""With no channel that reaches a person (and REAPER_REQUIRE_CHANNEL=true, the default) a
warning goes only to the log and licenses nothing: the reap table, its summary, `--json`,
`reaper status` and the status page say so, name the variables to set, and never promise a
termination that cannot happen. The pass exits 0 before the deadline (nothing is held yet)
and 1 once the instance is held past it ("No silent exemption")."""

from __future__ import annotations

from pathlib import Path

from reaper.channels.base import LogNotifier, Notifier
from reaper.interfaces.readmodel import read_view
from reaper.interfaces.views import reap_json, reap_table
from reaper.interfaces.views.status import status_json, status_lines
from reaper.interfaces.web.page import status_page
from reaper.passes.reap import ReapReport
from tests.reap_support import World, action_of, world
from tests.settings_support import replaced

PROMISE = "will be terminated"
# What a pass with no channel configured sends through: the log.
LOG_ONLY = LogNotifier()
SET_A_CHANNEL = "nothing will be terminated until one is set"


def _warned(w: World, notifier: Notifier = LOG_ONLY) -> tuple[str, ReapReport]:
    """A pod warned 1h before its deadline, by passes whose warnings reach only the log
    unless told otherwise."""
    pod = w.runpod.add_pod(status="EXITED")
    w.run(notifier=notifier)
    w.advance(23)
    report = w.run(notifier=notifier)
    assert action_of(report, pod) == "warn"
    return pod, report


def _status_text(w: World) -> str:
    store = w.store(read_only=True)
    try:
        data = status_json(w.settings, [], None, store.history(), w.clock.now(), store.listings())
    finally:
        store.close()
    return "\n".join(status_lines(data, width=400))


def _page(w: World) -> str:
    store = w.store(read_only=True)
    try:
        view = read_view(store, w.settings, w.clock.now())
    finally:
        store.close()
    return status_page(view, w.settings, "csrf").decode()


def test_the_reap_table_says_the_warning_went_to_the_log_and_nothing_will_go(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        pod, report = _warned(w)
        table = reap_table(report, width=400)
        assert SET_A_CHANNEL in table and "NTFY_URL" in table and "TELEGRAM_BOT_TOKEN" in table
        assert "1 warned (log only)" in table
        (row,) = [line for line in table.splitlines() if pod in line]
        assert "warn (log only)" in row and "but held" in row and PROMISE not in row
        assert report.exit_code == 0, "before the deadline nothing is held yet"


def test_reap_json_keeps_its_shape_and_says_it(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod, report = _warned(w)
        data = reap_json(report)
        assert data["no_channel"] is True
        assert SET_A_CHANNEL in data["no_channel_note"] and "NTFY_URL" in data["no_channel_note"]
        (action,) = [a for a in data["actions"] if a["id"] == pod]
        assert action["action"] == "warn" and PROMISE not in action["reason"]
        assert "held" in action["reason"]


def test_past_the_deadline_it_is_held_and_the_pass_exits_1(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod, _report = _warned(w)
        w.advance(1)
        report = w.run(notifier=LOG_ONLY)
        assert action_of(report, pod) == "hold"
        assert report.exit_code == 1
        assert SET_A_CHANNEL in reap_table(report, width=400)
        assert w.runpod.mutations == []


def test_status_and_the_page_say_held_not_scheduled(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod, _report = _warned(w)
        text = _status_text(w)
        assert SET_A_CHANNEL in text
        (row,) = [line for line in text.splitlines() if pod in line]
        assert "held from" in row and "scheduled" not in row
        page = _page(w)
        assert "Will be terminated" not in page
        assert 'id="no-channel"' in page and SET_A_CHANNEL in page
        assert "Held: due " in page


def test_an_instance_not_yet_warned_is_shown_held_too(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run(notifier=LOG_ONLY)
        (row,) = [line for line in _status_text(w).splitlines() if pod in line]
        assert "held from" in row and "scheduled" not in row
        assert "Will be terminated" not in _page(w)


def test_with_require_channel_false_the_log_warning_is_a_real_notice(tmp_path: Path) -> None:
    with world(tmp_path, require_channel=False) as w:
        pod, report = _warned(w)
        table = reap_table(report, width=400)
        assert SET_A_CHANNEL not in table
        assert "REAPER_REQUIRE_CHANNEL=false accepts them" in table
        (row,) = [line for line in table.splitlines() if pod in line]
        assert PROMISE in row
        assert "Will be terminated" in _page(w)


def test_with_a_channel_that_reaches_a_person_nothing_is_said(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.settings = replaced(w.settings, ntfy_url="http://127.0.0.1:9/phone")
        pod, report = _warned(w, w.notifier)
        table = reap_table(report, width=400)
        assert report.no_channel_note == "" and "log only" not in table
        (row,) = [line for line in table.splitlines() if pod in line]
        assert PROMISE in row
        assert 'id="no-channel"' not in _page(w)

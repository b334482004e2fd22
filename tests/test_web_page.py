"""The status page over plain HTTP: what it shows of a fleet that real reap passes recorded,
escaping, keep and unkeep from the page (CSRF-checked, the same records as `reaper keep`), the
`/status` JSON's new keys, and that a page view never asks a provider."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from reaper.core.units import utc
from reaper.interfaces.web.session import SESSION_COOKIE
from tests.heartbeat_support import ADMIN
from tests.reap_support import START
from tests.web_support import EVIL_NAME, csrf_of, fleet, page_of


def _section(page: str, name: str) -> str:
    match = re.search(rf'<section class="card" id="{name}">(.*?)</section>', page, re.S)
    assert match, name
    return match.group(1)


def test_the_page_shows_what_bills_what_goes_when_and_who_is_silent(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
    running = _section(page, "running")
    assert "llm-finetune" in running and "$1.64/h" in running and "watchdog pinging" in running
    assert "eval-harness" in running and "no watchdog" in running and "$0.41/h" in running
    stopped = _section(page, "stopped")
    due = START + timedelta(hours=23) + timedelta(hours=24)
    assert "Will be terminated" in stopped and utc(due) in stopped
    assert "$0.055/h storage" in stopped  # 200 GB at $0.20/GB-month
    assert "old-run" not in stopped, "terminated since its listing: gone from the fleet"
    monitors = _section(page, "monitors")
    assert 'data-state="down"' in monitors and "trainer-box" in monitors
    assert "CUDA out of memory &lt;b&gt;at step 1200&lt;/b&gt;" in monitors
    terminations = _section(page, "terminations")
    assert "old-run" in terminations and "confirmed" in terminations
    assert "$20.00/mo" in terminations  # 100 GB × $0.20/GB-month
    balances = _section(page, "balances")
    assert "runway" in balances
    assert "<svg" in _section(page, "spend")
    assert 'id="age"' in page and "fleet as listed" in page


def test_provider_names_are_text_never_markup(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
    assert "<script" not in page
    assert "sweep-&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert EVIL_NAME not in page


def test_a_page_view_asks_no_provider(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        before = (len(f.world.runpod.requests), len(f.world.vast.requests))
        page_of(f)
        f.http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"})
        assert (len(f.world.runpod.requests), len(f.world.vast.requests)) == before


def test_keep_from_the_page_writes_the_keep_record_with_who_asked(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        key = f"runpod:{f.stopped_id}"
        answer = f.http.post("/keep", data={"instance": key, "for": "1d", "csrf": csrf_of(page)})
        assert answer.status_code == 303 and answer.headers["location"].startswith(
            "/?kept=runpod%3A"
        )
        kept = f.app.store.history().kept[key]
        assert kept.by == "status page"
        assert kept.until == f.app.clock.now() + timedelta(days=1)
        stopped = _section(f.http.get("/").text, "stopped")
        assert "Kept until" in stopped and "by status page" in stopped
        assert "Unkeep" in stopped and "Will be terminated" not in stopped
        unkept = f.http.post("/unkeep", data={"instance": key, "csrf": csrf_of(page)})
        assert unkept.status_code == 303
        assert key not in f.app.store.history().kept
        assert "Will be terminated" in _section(f.http.get("/").text, "stopped")
        # Both are audit records naming the page, as the phone's buttons are.
        actions = f.app.store.action_log()
        assert [(a.kind, a.targets, a.by, a.via, a.done) for a in actions] == [
            ("keep", (key,), "status page", "status page", True),
            ("unkeep", (key,), "status page", "status page", True),
        ]


def test_a_keep_without_or_with_a_wrong_csrf_token_is_refused(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        key = f"runpod:{f.stopped_id}"
        for form in (
            {"instance": key, "for": "1d"},
            {"instance": key, "for": "1d", "csrf": ""},
            {"instance": key, "for": "1d", "csrf": csrf_of(page) + "x"},
        ):
            answer = f.http.post("/keep", data=form)
            assert answer.status_code == 403 and "CSRF" in answer.text
        # A CSRF token of another session is no token for this one.
        f.http.cookies.clear()
        other_page = page_of(f)
        assert csrf_of(other_page) != csrf_of(page)
        assert (
            f.http.post("/keep", data={"instance": key, "csrf": csrf_of(page)}).status_code == 403
        )
        assert f.app.store.history().kept == {}


def test_a_keep_without_a_session_is_the_sign_in_page(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        f.http.cookies.clear()
        key = f"runpod:{f.stopped_id}"
        for cookie in ("", f"{SESSION_COOKIE}=v1.1.x.forged"):
            answer = f.http.post(
                "/keep", data={"instance": key, "csrf": csrf_of(page)}, headers={"cookie": cookie}
            )
            assert answer.status_code == 403 and 'action="/login"' in answer.text
        assert f.app.store.history().kept == {}


def test_bad_keep_forms_are_one_line_4xx(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        csrf = csrf_of(page_of(f))
        for form, status in (
            ({"instance": "runpod:no-such-pod", "csrf": csrf}, 404),
            ({"instance": "nonsense", "csrf": csrf}, 400),
            ({"instance": "runpod:../x", "csrf": csrf}, 400),
            ({"instance": f"runpod:{f.stopped_id}", "for": "99y", "csrf": csrf}, 400),
            ({"csrf": csrf}, 400),
        ):
            answer = f.http.post("/keep", data=form)
            assert answer.status_code == status, form
            assert answer.text.count("\n") == 1
        huge = f.http.post(
            "/keep",
            content=b"csrf=" + csrf.encode() + b"&instance=" + b"x" * 20000,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert huge.status_code == 413 and huge.text.count("\n") == 1
        assert f.app.store.history().kept == {}


def test_the_page_says_how_old_its_data_is(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.app.advance(hours=5)
        page = page_of(f)
    assert "5h ago" in page and "old: the reap passes have not listed" in page


def test_head_of_the_page_has_no_body(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        f.sign_in()
        head = f.http.head("/")
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) > 1000


def test_status_json_gains_names_costs_deadlines_runway_and_snapshots(tmp_path: Path) -> None:
    with fleet(tmp_path) as f:
        data = f.http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    assert {"at", "counts", "monitors", "reaping", "last_reap", "fleet"} <= set(data)
    [llm] = [r for r in data["running"] if r["name"] == "llm-finetune"]
    assert llm["cost_per_hour"] == 1.64 and llm["watchdog"]["state"] == "up"
    [stopped] = data["stopped"]
    assert stopped["name"] == EVIL_NAME and stopped["outlook"] == "scheduled"
    assert stopped["terminate_at"] == "2026-03-04T08:00:00Z"
    assert stopped["kept"] is None
    assert {b["provider"] for b in data["balances"]} == {"runpod", "vast"}
    assert all(b["runway_hours"] is not None for b in data["balances"])
    [terminated] = data["terminations"]
    assert terminated["confirmed"] and terminated["saved_per_month"] == 20.0
    assert len(data["snapshots"]) == 3
    assert data["snapshots"][-1]["accounts"][0]["counts"]
    assert data["bills_per_hour"]["running"] == 2.05
    assert data["listed_at"] == "2026-03-03T09:00:00Z"

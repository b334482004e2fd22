"""Every safety rule holds for DigitalOcean, through the real reap pass and client over loopback
against the emulator: the license (a warning heard by a person, then the destroy at its
deadline; nothing without one), the reading taken right before the delete, unreadable
protection, incomplete paging, a lingering `archive` counted as gone, and a lone droplet's
destroy confirmed only by its own endpoint's 404 `not_found`."""

from __future__ import annotations

import os
from pathlib import Path

from emulators.server import Response
from reaper.channels.base import LogNotifier
from tests.cli_process import run_reaper
from tests.digitalocean_support import TOKEN, action_of, do_world


def test_a_powered_off_droplet_is_warned_then_destroyed_at_its_deadline(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        droplet = w.do.add_droplet(status="off", name="llm-finetune")
        w.do.add_droplet(status="active")
        w.run()
        w.advance(21)
        assert action_of(w.run(), droplet) is None, "not yet within the warning window"
        w.advance(1)
        assert action_of(w.run(), droplet) == "warn"
        w.advance(1)
        assert action_of(w.run(), droplet) is None, "warned, not yet due"
        assert w.deletes() == []
        (warning,) = [a for a in w.notifier.alerts if a.event == "termination_warning"]
        assert "will be terminated in 2h" in warning.title
        assert "$3.39/h" in warning.body
        assert "A powered-off droplet still bills its full price" in warning.body
        assert "of storage" not in warning.body, "a powered-off droplet bills its whole price"
        assert "a start and stop between two checks cannot be seen" in warning.body
        assert "digitalocean:" in warning.body and "name or tags" in warning.body
        w.advance(1)
        report = w.run()
        (action,) = [a for a in report.actions if a.id == str(droplet)]
        assert (action.action, action.done, action.confirmed) == ("terminate", True, True)
        assert w.deletes() == [f"/v2/droplets/{droplet}"]
        assert report.exit_code == 0
        (done,) = [a for a in w.notifier.alerts if a.event == "terminated"]
        assert "of storage" not in done.body
        assert "that stops $2,474.70/month." in done.body


def test_nothing_is_destroyed_without_a_warning_a_person_heard(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        droplet = w.do.add_droplet(status="off")
        log_only = LogNotifier()
        w.run(notifier=log_only)
        w.advance(23)
        w.run(notifier=log_only)
        w.advance(5)
        report = w.run(notifier=log_only)
        assert action_of(report, droplet) == "hold"
        (held,) = [a for a in report.actions if a.id == str(droplet)]
        assert "REAPER_REQUIRE_CHANNEL=false" in held.reason
        assert w.deletes() == []


def test_a_droplet_started_between_the_listing_and_the_delete_is_not_destroyed(
    tmp_path: Path,
) -> None:
    """The user powers it on right after the pass's listing, as the warning advises: the
    reading taken right before the delete shows it active."""
    with do_world(tmp_path) as w:
        due = w.do.add_droplet(status="off")
        w.do.add_droplet(status="active")
        w.reach_deadline()
        w.do.after_next("list", lambda: w.do.set_status(due, "active"))
        report = w.run()
        assert w.deletes() == []
        assert action_of(report, due) == "hold"
        assert w.do.count("get") == 1, "the fresh read is the droplet's own endpoint"


def test_a_droplet_whose_protection_cannot_be_read_is_never_destroyed(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        no_lock = w.do.add_droplet(status="off")
        null_tags = w.do.add_droplet(status="off", tags=None)
        w.do.drop_field(no_lock, "locked")
        w.do.modify_droplet(null_tags, tags=None)
        tagged = w.do.add_droplet(status="off", tags=["reaper:keep"])
        locked = w.do.add_droplet(status="off", locked=True)
        w.reach_deadline()
        report = w.run()
        assert w.deletes() == []
        for droplet in (no_lock, null_tags, tagged, locked):
            assert action_of(report, droplet) == "protect"
        reasons = {a.id: a.reason for a in report.actions}
        assert "`locked` is missing" in reasons[str(no_lock)]
        assert "`tags` is null" in reasons[str(null_tags)]
        assert "a tag contains the protect marker" in reasons[str(tagged)]


def test_a_listing_that_cannot_be_followed_decides_nothing(tmp_path: Path) -> None:
    """An incomplete listing is an error for its account alone: no decision, no delete, an
    alert; the other account goes on."""
    with do_world(tmp_path, accounts={"main": TOKEN, "lab": "dop_v1_lab_token_0001"}) as w:
        broken = [w.do.add_droplet(status="off") for _ in range(201)]
        fine = w.do.add_droplet(status="off", account="lab")
        w.reach_deadline()
        w.do.paging_fault = "repeat"
        report = w.run()
        assert [(e.account, "does not lead to page 2" in e.message) for e in report.errors] == [
            ("main", True)
        ]
        assert all(action_of(report, d) is None for d in broken)
        assert action_of(report, fine) == "terminate"
        assert w.deletes() == [f"/v2/droplets/{fine}"]
        assert report.exit_code == 1


def test_a_lingering_archive_after_the_destroy_counts_as_gone(tmp_path: Path) -> None:
    with do_world(tmp_path, emulator={"delete_linger_reads": 5}) as w:
        droplet = w.do.add_droplet(status="off")
        w.do.add_droplet(status="active")
        w.reach_deadline()
        report = w.run()
        (action,) = [a for a in report.actions if a.id == str(droplet)]
        assert action.confirmed
        assert (w.do.droplet(droplet) or {}).get("status") == "archive", "still listed"
        # The next pass sees it archived: terminated, billing nothing, nothing to do.
        again = w.run()
        (listed,) = [i for i in again.instances if i.id == str(droplet)]
        assert (listed.state, listed.cost_per_hour) == ("terminated", 0.0)
        assert action_of(again, droplet) is None
        assert len(w.deletes()) == 1


def test_a_lone_droplets_destroy_is_confirmed_by_its_own_404_not_found(tmp_path: Path) -> None:
    """Nothing else in the account to check an empty re-list against: the droplet's own
    endpoint must answer 404 `not_found`."""
    with do_world(tmp_path) as w:
        droplet = w.do.add_droplet(status="off")
        w.reach_deadline()
        report = w.run()
        (action,) = [a for a in report.actions if a.id == str(droplet)]
        assert action.confirmed
        gets = [r for r in w.do.requests if r.kind == "get"]
        assert gets[-1].status == 404


def test_a_lone_droplet_whose_own_endpoint_answers_another_404_is_not_confirmed(
    tmp_path: Path,
) -> None:
    with do_world(tmp_path) as w:
        droplet = w.do.add_droplet(status="off")
        w.reach_deadline()
        refused = Response.json(404, {"id": "forbidden_area", "message": "Not for this token."})
        w.do.after_next("delete", lambda: w.do.answer_as("get", refused))
        report = w.run()
        (action,) = [a for a in report.actions if a.id == str(droplet)]
        assert action.done and not action.confirmed
        assert report.exit_code == 1


def test_a_dry_run_lists_what_it_would_do_and_calls_nothing_that_changes(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        droplet = w.do.add_droplet(status="off")
        w.reach_deadline()
        report = w.run(dry_run=True)
        (action,) = [a for a in report.actions if a.id == str(droplet)]
        assert (action.action, action.done) == ("terminate", False)
        assert w.do.mutations == []


def test_reaper_keep_spares_a_droplet_by_its_id(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        droplet = w.do.add_droplet(status="off", name="precious")
        w.do.add_droplet(status="active")
        w.run()
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "DIGITALOCEAN_TOKEN": TOKEN,
            "DIGITALOCEAN_API_URL": w.do.api_url,
            "REAPER_STATE": f"sqlite:///{w.state_path}",
        }
        kept = run_reaper(["keep", f"digitalocean:0{droplet}"], env=env, cwd=tmp_path)
        assert kept.returncode == 0, kept.stderr
        assert f"kept digitalocean:{droplet} (precious)" in kept.stdout
        w.advance(23)
        w.run()
        w.advance(1)
        report = w.run()
        assert action_of(report, droplet) == "protect"
        assert w.deletes() == []


def test_empty_re_lists_after_a_destroy_that_did_nothing_confirm_nothing(tmp_path: Path) -> None:
    """DigitalOcean answered 204 but the droplet stays; every re-list after it answers an empty
    fleet, which proves nothing while the active droplet beside it must still be there."""
    with do_world(tmp_path, emulator={"delete_never_confirms": True}) as w:
        droplet = w.do.add_droplet(status="off")
        w.do.add_droplet(status="active", name="witness")
        w.reach_deadline()
        w.do.after_next("delete", lambda: w.do.empty_next("list", count=20))
        report = w.run()
        (action,) = [a for a in report.actions if a.id == str(droplet)]
        assert action.done and not action.confirmed
        assert report.exit_code == 1

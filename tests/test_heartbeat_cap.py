"""REAPER_MAX_MONITORS bounds the monitors first pings create, and a retired monitor coming
back takes a place like a new one; retired monitors stay a week after they were last heard
from, and at most REAPER_MAX_MONITORS of them: ping + bye on new names with a leaked key cannot
grow the store, while a fleet of short-lived instances churns freely."""

from __future__ import annotations

from pathlib import Path

from tests.heartbeat_support import make_settings, served


def test_the_first_ping_creates_monitors_up_to_the_cap(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, max_monitors=3)) as app:
        for host in ("a", "b", "c"):
            assert app.ping(host).status_code == 200
        refused = app.ping("d")
        assert refused.status_code == 403
        assert "REAPER_MAX_MONITORS" in refused.text and refused.text.count("\n") == 1
        assert app.store.get_monitor("d") is None
        assert app.ping("a").status_code == 200  # existing monitors still ping
        app.ping("c", "bye")  # a retired monitor frees its place
        assert app.ping("d").status_code == 200
        # Coming back takes a place again: a, b and d hold all three.
        assert app.ping("c").status_code == 403
        retired = app.store.get_monitor("c")
        assert retired is not None and retired.status == "retired"  # left as it was
        app.ping("d", "bye")
        assert app.ping("c").status_code == 200


def test_ping_then_bye_cannot_grow_the_store_past_the_cap(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, max_monitors=3)) as app:
        for i in range(20):
            assert app.ping(f"junk-{i}").status_code == 200
            app.ping(f"junk-{i}", "bye")
        assert len(app.store.list_monitors()) <= 3


def test_reviving_retired_monitors_cannot_pass_the_cap(tmp_path: Path) -> None:
    with served(make_settings(tmp_path, max_monitors=3)) as app:
        for i in range(20):
            app.ping(f"junk-{i}")
            app.ping(f"junk-{i}", "bye")
        answers = [app.ping(f"junk-{i}").status_code for i in range(20)]
        assert answers.count(200) == 3 and answers.count(403) == 17
        active = [m for m in app.store.list_monitors() if m.status != "retired"]
        assert len(active) == 3


def test_a_churning_fleet_of_short_lived_instances_keeps_getting_monitors(
    tmp_path: Path,
) -> None:
    with served(make_settings(tmp_path, max_monitors=3)) as app:
        for i in range(12):
            host = f"job-{i}"
            assert app.ping(host, "start").status_code == 200
            assert app.ping(host, "0").status_code == 200
            assert app.ping(host, "bye").status_code == 200
            app.advance(minutes=10)
        kept = [m.host for m in app.store.list_monitors()]
        assert kept == ["job-10", "job-11", "job-9"]  # the most recently heard from


def test_byes_prune_every_tenth_of_the_cap(tmp_path: Path) -> None:
    """Between two watch passes a ping + bye flood adds at most a tenth of the cap."""
    with served(make_settings(tmp_path, max_monitors=20)) as app:
        sizes = []
        for i in range(45):
            app.ping(f"junk-{i}")
            app.ping(f"junk-{i}", "bye")
            sizes.append(len(app.store.list_monitors()))
        assert max(sizes) <= 20 + 2
        assert sizes[-1] > 20  # the last byes wait for the next prune


def test_the_watch_pass_deletes_monitors_retired_for_a_week(tmp_path: Path) -> None:
    with served(make_settings(tmp_path)) as app:
        app.ping("laptop")
        app.ping("laptop", "bye")
        app.ping("quiet-box")
        app.advance(days=7)
        assert app.watch().pruned == 0  # a week exactly: not yet longer than a week
        assert app.store.get_monitor("laptop") is not None
        app.advance(seconds=1)
        assert app.watch().pruned == 1
        assert app.store.get_monitor("laptop") is None
        # A silent monitor is down, not retired: it stays, and keeps alerting.
        quiet = app.store.get_monitor("quiet-box")
        assert quiet is not None and quiet.status == "down"

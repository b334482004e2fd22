"""A stuck alert about a protected instance says that it is protected, and by what, and never
promises that it will be reaped: a powered-off droplet tagged or named with the protect marker,
a kept one, or a pod in a state the reaper cannot read whose name carries the marker."""

from __future__ import annotations

from pathlib import Path

from emulators.channels import RecordingNotifier
from reaper.core.models import Alert, KeptInstance
from tests.digitalocean_support import do_world
from tests.reap_support import world


def _stuck(notifier: RecordingNotifier) -> list[Alert]:
    return [a for a in notifier.alerts if a.event == "stuck"]


def _promises_nothing(alert: Alert) -> None:
    assert "REAPER_STOPPED_TTL" not in alert.body
    assert "reaped" not in alert.body
    assert "terminate it if it is dead" not in alert.body
    assert "the reaper never terminates it" in alert.body


def test_a_droplet_protected_by_its_tag_is_stuck_without_a_promise(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        droplet = w.do.add_droplet(name="mi300x-bench", status="off", tags=["reaper:keep"])
        w.run()
        w.advance(6)
        w.run()
        (alert,) = _stuck(w.notifier)
        assert str(droplet) in alert.title
        assert "protected (a tag contains the protect marker 'reaper:keep')" in alert.body
        _promises_nothing(alert)


def test_a_droplet_protected_by_its_name_says_so(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        w.do.add_droplet(name="render reaper:keep", status="off")
        w.run()
        w.advance(6)
        w.run()
        (alert,) = _stuck(w.notifier)
        assert "name contains the protect marker" in alert.body
        _promises_nothing(alert)


def test_a_kept_droplet_says_it_is_kept(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        droplet = w.do.add_droplet(name="render", status="off")
        w.run()
        store = w.store()
        store.keep(KeptInstance(key=f"digitalocean:{droplet}", since=w.clock.now()))
        store.close()
        w.advance(6)
        w.run()
        (alert,) = _stuck(w.notifier)
        assert "kept by `reaper keep`" in alert.body
        _promises_nothing(alert)


def test_an_unreadable_pod_named_with_the_marker_says_it_is_protected(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.runpod.add_pod(name="notebook reaper:keep", status="MIGRATING_SOMEWHERE")
        w.run()
        w.advance(25)
        w.run()
        (alert,) = _stuck(w.notifier)
        assert "name contains the protect marker" in alert.body
        _promises_nothing(alert)


def test_an_unprotected_powered_off_droplet_still_says_it_is_reaped(tmp_path: Path) -> None:
    with do_world(tmp_path) as w:
        w.do.add_droplet(name="render", status="off")
        w.run()
        w.advance(6)
        w.run()
        (alert,) = _stuck(w.notifier)
        assert "reaped after REAPER_STOPPED_TTL" in alert.body
        assert "protected" not in alert.body

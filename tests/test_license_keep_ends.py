"""Issue 24.2: a keep or an unkeep recorded after a warning voids that warning. When the keep
ends, the next pass warns anew with a new deadline; it never terminates on the warning the
person answered with Keep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.phone_support import phone
from tests.reap_support import action_of, cli, events, world


def test_a_keep_from_the_phone_that_ends_is_followed_by_a_new_warning(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()
        p.telegram.press(message, "Keep 1 day")
        p.poll()
        [kept] = p.actions()
        assert kept.done and kept.result.startswith("Kept trainer-7")
        store = p.w.store()
        until = store.history().kept[f"runpod:{pod}"].until
        store.close()
        assert until is not None

        p.w.advance(1)
        assert action_of(p.run(), pod) == "protect"
        p.w.clock.set(until)  # the keep's last instant is over: the first pass after it
        report = p.run()
        assert action_of(report, pod) == "warn", "a keep that ends needs a new warning"
        assert p.w.runpod.mutations == []
        new = p.warning_message()
        assert new.message_id != message.message_id and "will be terminated in 1h" in new.text
        p.w.advance(1)
        assert action_of(p.run(), pod) == "terminate"
        assert [m.method for m in p.w.runpod.mutations] == ["DELETE"]


def test_a_short_keep_inside_the_notice_voids_the_warning(tmp_path: Path) -> None:
    """Kept for 30 minutes ten minutes after the warning: at the old deadline the keep is over,
    the old warning is void, and the pass warns anew instead of terminating."""
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED", name="short-keep")
        w.run()
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        kept = cli(w, "keep", f"runpod:{pod}", "--for", "30m")
        assert kept.returncode == 0, kept.stderr
        w.advance(1)
        assert action_of(w.run(), pod) == "warn"
        assert w.runpod.mutations == []
        assert events(w.notifier).count("termination_warning") == 2
        w.advance(1)
        assert action_of(w.run(), pod) == "terminate"


def test_reaper_unkeep_voids_a_warning_given_before_it(tmp_path: Path) -> None:
    """A keep ran out, the pod was warned, then `reaper unkeep` ended the (expired) keep: the
    next pass warns anew rather than terminating on the warning given before the unkeep."""
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED", name="unkept")
        w.run()
        assert cli(w, "keep", f"runpod:{pod}", "--for", "30m").returncode == 0
        w.advance(23)
        assert action_of(w.run(), pod) == "warn"
        ended = cli(w, "unkeep", f"runpod:{pod}")
        assert ended.returncode == 0, ended.stderr
        w.clock.advance(timedelta(hours=1))
        report = w.run()
        assert action_of(report, pod) == "warn", "an unkeep after a warning voids it"
        assert w.runpod.mutations == []
        w.advance(1)
        assert action_of(w.run(), pod) == "terminate"


def test_a_keep_ends_a_terminate_now_still_waiting_for_a_pass(tmp_path: Path) -> None:
    """Terminate now was pressed while a pass held the lease (it waits for the next pass),
    then the pod was kept for half an hour: the person changed their mind. Once the keep is
    over, the waiting press terminates nothing; a new warning comes first."""
    from reaper.passes import keeping
    from reaper.passes.reap.state import LEASE_NAME, LEASE_TTL

    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()
        store = p.w.store()
        assert store.acquire_lease(LEASE_NAME, "another:1:pass", p.w.clock.now(), LEASE_TTL)
        store.close()
        p.telegram.press(message, "Terminate now")
        p.poll()
        p.telegram.press(p.telegram.message(message.message_id), "⚠️ Yes, terminate")
        p.poll()
        assert "not done yet" in p.telegram.message(message.message_id).text
        store = p.w.store()
        store.release_lease(LEASE_NAME, "another:1:pass")
        now = p.w.clock.now()
        key = f"runpod:{pod}"
        keeping.keep(store, key, now=now, until=now + timedelta(minutes=30), by="me", via="test")
        assert store.termination_requests(now) == [], "the keep ended the waiting press"
        store.close()
        p.w.advance(1)
        report = p.run()
        assert action_of(report, pod) == "warn"
        assert p.w.runpod.mutations == []


def test_an_unkeep_while_the_warning_is_on_its_way_voids_it(tmp_path: Path) -> None:
    """The person ends a (run-out) keep while the pass's warning is being delivered: that
    warning is not recorded as a license — a later pass warns anew before any termination."""
    from reaper.core.models import Alert
    from reaper.passes import keeping
    from tests.reap_support import ActingNotifier

    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="unkept-meanwhile")
        key = f"runpod:{pod}"
        w.run()
        store = w.store()
        now = w.clock.now()
        keeping.keep(store, key, now=now, until=now + timedelta(hours=1), by="me", via="test")
        store.close()
        w.advance(23)

        def unkeep_on_the_way(alert: Alert) -> None:
            if alert.event == "termination_warning":
                other = w.store()
                keeping.unkeep(other, key, now=w.clock.now(), by="me", via="test")
                other.close()

        assert action_of(w.run(notifier=ActingNotifier(unkeep_on_the_way)), pod) == "warn"
        w.advance(1)
        assert action_of(w.run(), pod) == "warn", "the unkeep came after that warning"
        assert w.runpod.mutations == []
        w.advance(1)
        assert action_of(w.run(), pod) == "terminate"

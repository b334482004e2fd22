"""A "Terminate now" link is bound to the stopped stretch of the warning it came with, not to
that warning: when a newer warning of the same stretch was sent (a keep and an unkeep voided the
first), the older link still terminates while it lasts; after a restart it is refused."""

from __future__ import annotations

from pathlib import Path

from reaper.passes import keeping
from tests.phone_support import Phone, link_path, phone
from tests.reap_support import action_of


def _terminate_links(p: Phone) -> list[str]:
    assert p.ntfy is not None
    warnings = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
    return [link_path(x.actions[2]["url"]) for x in warnings]


def _keep_then_unkeep(p: Phone, key: str) -> None:
    store = p.w.store()
    try:
        now = p.w.clock.now()
        keeping.keep(store, key, now=now, until=None, by="test", via="test")
        keeping.unkeep(store, key, now=now, by="test", via="test")
    finally:
        store.close()


def test_an_older_link_of_the_same_stretch_still_terminates(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        _keep_then_unkeep(p, f"runpod:{pod}")
        p.w.advance(1)
        assert action_of(p.run(), pod) == "warn", "the keep voided the first warning"
        older, newer = _terminate_links(p)
        with p.served() as app:
            done = app.http.post(older, data={"choice": "0"})
            assert done.status_code == 200, done.text
            assert done.text.startswith(f"Terminated trainer-7 (runpod:{pod})")
            assert app.http.get(newer).status_code == 200, "the newer link is unused"
            assert app.http.post(newer, data={"choice": "0"}).status_code == 409
        assert [m.method for m in p.w.runpod.mutations] == ["DELETE"]


def test_an_older_link_of_an_earlier_stretch_is_refused(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        [older] = _terminate_links(p)
        p.w.runpod.set_status(pod, "RUNNING")
        p.w.advance(0.25)
        p.run()
        p.w.runpod.set_status(pod, "EXITED")
        p.w.advance(0.25)
        p.run()
        with p.served() as app:
            refused = app.http.post(older, data={"choice": "0"})
        assert refused.status_code == 409
        assert "it was started and stopped again since this warning" in refused.text
        assert p.w.runpod.mutations == []

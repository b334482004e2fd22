"""A refused press does not use up its button or link: the request was not made. A "Terminate
now" refused because the instance is kept works, by the same link or button, once the keep is
ended (while the link lasts and the stopped stretch is the same). A request that was made but
not carried out yet (a pass held the lease) is what spends it: the next pass carries it out."""

from __future__ import annotations

from pathlib import Path

from reaper.core.models import KeptInstance
from reaper.passes.reap.state import LEASE_NAME, LEASE_TTL
from tests.phone_support import Phone, link_path, phone


def _keep(p: Phone, key: str) -> None:
    store = p.w.store()
    try:
        store.keep(KeptInstance(key=key, since=p.w.clock.now()))
    finally:
        store.close()


def _unkeep(p: Phone, key: str) -> None:
    store = p.w.store()
    try:
        assert store.unkeep(key)
    finally:
        store.close()


def test_a_refused_terminate_link_works_once_the_keep_is_ended(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        terminate = link_path(published.actions[2]["url"])
        key = f"runpod:{pod}"
        _keep(p, key)
        with p.served() as app:
            refused = app.http.post(terminate, data={"choice": "0"})
            assert refused.status_code == 409, refused.text
            assert "kept by `reaper keep`" in refused.text
            assert app.http.get(terminate).status_code == 200, "the page still offers it"
            _unkeep(p, key)
            p.w.advance(0.1)
            done = app.http.post(terminate, data={"choice": "0"})
            assert done.status_code == 200, done.text
            assert done.text.startswith(f"Terminated trainer-7 ({key}), as action link asked")
            again = app.http.post(terminate, data={"choice": "0"})
            assert again.status_code == 404, "used once it acted"
        assert [m.method for m in p.w.runpod.mutations] == ["DELETE"]
        assert [(a.kind, a.done) for a in p.actions()] == [
            ("terminate", False),
            ("terminate", True),
        ]


def test_a_refused_terminate_button_can_be_pressed_again_once_the_keep_is_ended(
    tmp_path: Path,
) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        message = p.warning_message()
        key = f"runpod:{pod}"
        _keep(p, key)
        p.telegram.press(message, "Terminate now")
        p.poll()
        p.telegram.press(p.telegram.message(message.message_id), "⚠️ Yes, terminate")
        p.poll()
        refused = p.telegram.message(message.message_id)
        assert "kept by `reaper keep`" in refused.text
        assert "Terminate now" in refused.labels, "the button stays"
        assert p.w.runpod.mutations == []

        _unkeep(p, key)
        p.w.advance(0.1)
        p.telegram.press(refused, "Terminate now")
        p.poll()
        assert p.telegram.answers[-1]["text"].startswith("Press “Yes, terminate” within")
        p.telegram.press(p.telegram.message(message.message_id), "⚠️ Yes, terminate")
        p.poll()
        assert p.telegram.message(message.message_id).text.endswith(
            f"✅ Terminated trainer-7 ({key}), as @alice (Telegram user 42) asked;"
            " confirmed gone by a new listing."
        )
        assert [m.method for m in p.w.runpod.mutations] == ["DELETE"]


def test_a_request_left_for_the_next_pass_spends_the_link(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        terminate = link_path(published.actions[2]["url"])
        store = p.w.store()
        assert store.acquire_lease(LEASE_NAME, "another pass", p.w.clock.now(), LEASE_TTL)
        store.close()
        with p.served() as app:
            later = app.http.post(terminate, data={"choice": "0"})
            assert later.status_code == 409 and "not done yet" in later.text
            assert app.http.post(terminate, data={"choice": "0"}).status_code == 404

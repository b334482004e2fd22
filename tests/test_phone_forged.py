"""Every forged or replayed input is refused, and never acts: a press from another chat, made-up
button data, a press after expiry, a second press of a one-shot button, a token too long or
unknown, odd methods, a cross-site POST, a wrong webhook secret (byte for byte the unknown
route's 404). Each answer is a one-line 4xx or a Telegram answer saying why — never a 5xx —
and no token, key or secret reaches a log line."""

from __future__ import annotations

import io
import json
import secrets
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from reaper.core import messages
from tests.fakes.telegram import Message
from tests.heartbeat_support import Served
from tests.log_support import json_log
from tests.phone_support import WEBHOOK_SECRET, Phone, link_path, phone, with_webhook

BOB = {"id": 666, "is_bot": False, "first_name": "Bob", "username": "bob"}


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    with json_log() as stream:
        yield stream


def _nothing_done(p: Phone) -> None:
    store = p.w.store()
    try:
        assert store.history().kept == {}
        assert store.action_log() == []
        assert store.termination_requests(p.w.clock.now()) == []
    finally:
        store.close()
    assert p.w.runpod.mutations == [] and p.w.vast.mutations == []


def _warned(p: Phone) -> Message:
    p.w.runpod.add_pod(status="EXITED", name="trainer-7")
    p.warn()
    return p.warning_message()


def _no_secret_logged(log: io.StringIO, *secrets_: str) -> None:
    lines = log.getvalue()
    assert lines, "the test logged nothing to look at"
    for secret in secrets_:
        assert secret not in lines


def test_forged_presses_through_long_polling_are_answered_and_do_nothing(
    tmp_path: Path, log: io.StringIO
) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        message = _warned(p)
        keep = message.button("Keep 1 day")["callback_data"]
        p.telegram.press(message, "Keep 1 day", chat_id="-100999", user=BOB)
        p.telegram.press(message, "Keep 1 day", data="a:" + secrets.token_urlsafe(24))
        p.telegram.press(message, "Keep 1 day", data="keep:runpod:abc")
        p.telegram.press(message, "Keep 1 day", data="a:" + "A" * 200)
        # A press on a message Telegram no longer shows (no message in the query).
        bare = p.telegram.press(message, "Keep 1 day", queue=False)
        del bare["callback_query"]["message"]
        p.telegram.queue(bare)
        p.telegram.queue({"update_id": 5, "message": {"text": "/start"}})
        poller = p.poll()
        assert poller.handled == 6
        assert [a["text"] for a in p.telegram.answers] == [
            messages.REFUSED_CHAT,
            messages.REFUSED_UNKNOWN,
            messages.REFUSED_UNKNOWN,
            messages.REFUSED_UNKNOWN,
            messages.REFUSED_CHAT,
        ]
        assert p.telegram.edits == []
        _nothing_done(p)
        _no_secret_logged(log, keep.removeprefix("a:"))


def test_a_press_after_expiry_and_a_second_press_do_nothing(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        message = _warned(p)
        p.telegram.press(message, "Keep 1 day")
        p.telegram.press(message, "Keep 1 day")
        p.poll()
        first, second = (a["text"] for a in p.telegram.answers)
        assert first.startswith("Kept trainer-7")
        assert second.startswith("Already used")
        assert len(p.actions()) == 1

        p.w.advance(24)
        p.telegram.press(message, "Keep 1 week")
        p.poll()
        assert p.telegram.answers[-1]["text"].startswith("Expired at ")
        assert len(p.actions()) == 1


def test_a_confirmation_after_its_ten_minutes_does_nothing(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        message = _warned(p)
        p.telegram.press(message, "Terminate now")
        p.poll()
        p.w.advance(11 / 60)
        p.telegram.press(p.telegram.message(message.message_id), "⚠️ Yes, terminate")
        p.poll()
        assert p.telegram.answers[-1]["text"].startswith("Expired at ")
        _nothing_done(p)


def _same_as_unknown(app: Served, response: httpx.Response) -> None:
    unknown = app.http.post("/no-such-route", content=b"{}")
    assert response.status_code == 404
    assert response.content == unknown.content
    assert response.headers.get("content-type") == unknown.headers.get("content-type")


def test_a_webhook_without_the_secret_is_the_unknown_route(
    tmp_path: Path, log: io.StringIO
) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        message = _warned(p)
        p.w.settings = with_webhook(p.settings)
        update = p.telegram.press(message, "Keep 1 day", queue=False)
        right = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
        wrong = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET + "x"}
        with p.served() as app:
            refused = [
                app.http.post(f"/telegram/{WEBHOOK_SECRET}", json=update),
                app.http.post(f"/telegram/{WEBHOOK_SECRET}", json=update, headers=wrong),
                app.http.post("/telegram/guess", json=update, headers=right),
                app.http.post(f"/telegram/{WEBHOOK_SECRET}x", json=update, headers=right),
                app.http.get(f"/telegram/{WEBHOOK_SECRET}"),
                app.http.put(f"/telegram/{WEBHOOK_SECRET}", json=update),
                app.http.post(f"/telegram/{WEBHOOK_SECRET}/more", json=update, headers=right),
            ]
            for response in refused:
                _same_as_unknown(app, response)
            # With the secret: a method it does not take is 405, junk is a one-line 400.
            get = app.http.get(f"/telegram/{WEBHOOK_SECRET}", headers=right)
            junk = app.http.post(f"/telegram/{WEBHOOK_SECRET}", content=b"{{{", headers=right)
            array = app.http.post(f"/telegram/{WEBHOOK_SECRET}", json=[1], headers=right)
            chat = p.telegram.press(message, "Keep 1 day", chat_id="-1009", queue=False)
            other = app.http.post(f"/telegram/{WEBHOOK_SECRET}", json=chat, headers=right)
        assert (get.status_code, get.headers["allow"]) == (405, "POST")
        assert (junk.status_code, junk.text) == (
            400,
            "expected a Telegram update (a JSON object)\n",
        )
        assert array.status_code == 400
        assert (other.status_code, other.text) == (200, "OK\n"), "refused, but answered 2xx"
        assert p.telegram.answers[-1]["text"] == messages.REFUSED_CHAT
        _nothing_done(p)
        _no_secret_logged(log, WEBHOOK_SECRET)


def test_without_a_webhook_secret_the_route_does_not_exist(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        message = _warned(p)
        update = p.telegram.press(message, "Keep 1 day", queue=False)
        with p.served() as app:
            for secret in ("", "x", WEBHOOK_SECRET):
                response = app.http.post(
                    f"/telegram/{secret}",
                    json=update,
                    headers={"X-Telegram-Bot-Api-Secret-Token": secret or "x"},
                )
                _same_as_unknown(app, response)
        _nothing_done(p)


def test_action_links_refuse_every_forgery_with_one_line(tmp_path: Path, log: io.StringIO) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        path = link_path(published.actions[0]["url"])
        token = path.removeprefix("/act/")
        with p.served() as app:
            answers = {
                "too long": app.http.get(f"/act/{token}A"),
                "far too long": app.http.post("/act/" + "A" * 5000),
                "made up": app.http.post("/act/" + secrets.token_urlsafe(24)),
                "not a token": app.http.get("/act/..%2F..%2Fetc"),
                "cross-site": app.http.post(path, headers={"Origin": "https://evil.example"}),
                "opaque origin": app.http.post(path, headers={"Origin": "null"}),
                "fetch metadata": app.http.post(path, headers={"Sec-Fetch-Site": "cross-site"}),
                "same-site, opaque": app.http.post(
                    path, headers={"Origin": "null", "Sec-Fetch-Site": "same-site"}
                ),
                "bad choice": app.http.post(path, content=b"choice=abc"),
                "no such choice": app.http.post(path, data={"choice": "7"}),
                "huge body": app.http.post(path, content=b"choice=0&" + b"x" * 10_000),
            }
            odd = {m: app.http.request(m, path) for m in ("PUT", "DELETE", "PATCH", "OPTIONS")}
            unknown = answers["made up"]
            assert (unknown.status_code, unknown.text) == (
                404,
                "unknown, used or expired action link\n",
            )
            for name in ("too long", "far too long", "not a token"):
                assert answers[name].status_code == 404, name
            assert answers["cross-site"].status_code == 403
            assert answers["opaque origin"].status_code == 403
            assert answers["fetch metadata"].status_code == 403
            # Another subdomain of the same site is no proof: `Origin` decides, and null is not.
            assert answers["same-site, opaque"].status_code == 403
            assert answers["bad choice"].status_code == 400
            assert answers["no such choice"].status_code == 404
            assert answers["huge body"].status_code == 413
            for method, response in odd.items():
                assert response.status_code == 405, method
                assert response.headers["allow"] == "GET, POST, HEAD"
            for response in [*answers.values(), *odd.values()]:
                assert response.status_code < 500
                assert response.text.count("\n") == 1, response.text
            _nothing_done(p)
            # None of that used the link: it still works, from its own page, once — as a
            # browser posts it when it names the origin null: fetch metadata says same-origin,
            # and the request came to REAPER_PUBLIC_URL's host (see tests/test_web_origin.py).
            own_page = {"Origin": "null", "Sec-Fetch-Site": "same-origin", "Host": "reaper.example"}
            ok = app.http.post(path, headers=own_page)
            assert ok.status_code == 200, ok.text
            used = app.http.get(path)
            assert used.status_code == 404
            p.w.advance(25)
        _no_secret_logged(log, token)


def test_an_expired_link_is_the_same_404(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        path = link_path(published.actions[0]["url"])
        p.w.clock.advance(timedelta(hours=24))
        with p.served() as app:
            for response in (app.http.get(path), app.http.post(path)):
                assert (response.status_code, response.text) == (
                    404,
                    "unknown, used or expired action link\n",
                )
        _nothing_done(p)


def test_the_store_holds_no_token(tmp_path: Path) -> None:
    """A copy of the state cannot act: grants are keyed by the tokens' hashes."""
    with phone(tmp_path, ntfy=True) as p:
        assert p.ntfy is not None and p.telegram is not None
        message = _warned(p)
        tokens = [b["callback_data"].removeprefix("a:") for row in message.keyboard for b in row]
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        tokens += [link_path(a["url"]).removeprefix("/act/") for a in published.actions]
        assert len(tokens) == 6
        raw = p.w.state_path.read_bytes() + json.dumps(p.actions(), default=str).encode()
        for suffix in ("-wal", "-shm"):
            extra = p.w.state_path.with_name(p.w.state_path.name + suffix)
            if extra.exists():
                raw += extra.read_bytes()
        for token in tokens:
            assert token.encode() not in raw


def test_a_button_that_asks_first_is_no_action_link(tmp_path: Path) -> None:
    """Telegram's "terminate now" asks for a second press: its data used as a link is refused,
    so the confirmation cannot be skipped."""
    with phone(tmp_path) as p:
        message = _warned(p)
        token = message.button("Terminate now")["callback_data"].removeprefix("a:")
        with p.served() as app:
            for response in (app.http.get(f"/act/{token}"), app.http.post(f"/act/{token}")):
                assert (response.status_code, response.text) == (
                    404,
                    "unknown, used or expired action link\n",
                )
        _nothing_done(p)

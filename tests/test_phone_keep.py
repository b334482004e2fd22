"""Keep from the phone, end to end: a warned pod kept with one press (through `getUpdates` as
`reaper serve` polls it, and through the webhook) or one action link is not terminated on its
deadline; the keep is the record `reaper keep` writes, and the audit names who asked."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from reaper.core.units import utc
from tests.phone_support import PUBLIC, WEBHOOK_SECRET, link_path, phone, with_webhook
from tests.reap_support import action_of


def test_a_press_through_long_polling_keeps_the_pod_past_its_deadline(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        warned = p.warn()
        assert action_of(warned, pod) == "warn"
        message = p.warning_message()
        assert message.labels == ["Keep 1 day", "Keep 1 week", "Terminate now"]
        assert [len(row) for row in message.keyboard] == [2, 1], "terminate on its own row"

        p.telegram.press(message, "Keep 1 day")
        pressed_at = p.w.clock.now()
        poller = p.poll()
        assert poller.handled == 1

        until = pressed_at + timedelta(days=1)
        [answer] = p.telegram.answers
        assert answer["text"] == (
            f"Kept trainer-7 (runpod:{pod}) until {utc(until)} by @alice (Telegram user 42)."
        )
        edited = p.telegram.message(message.message_id)
        assert edited.text.startswith(message.text)
        assert edited.text.endswith(f"✅ {answer['text']}")
        assert "Keep 1 day" not in edited.labels, "the used button is gone"
        assert "Keep 1 week" in edited.labels

        at_deadline = p.to_deadline()
        assert action_of(at_deadline, pod) == "protect"
        assert p.w.runpod.mutations == []
        store = p.w.store()
        kept = store.history().kept[f"runpod:{pod}"]
        store.close()
        assert (kept.since, kept.until) == (pressed_at, until)
        [record] = p.actions()
        assert (record.kind, record.by, record.via, record.done) == (
            "keep",
            "@alice (Telegram user 42)",
            "chat button",
            True,
        )


def test_a_press_through_the_webhook_keeps_the_pod(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        p.w.settings = with_webhook(p.settings)
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-8")
        p.warn()
        update = p.telegram.press(p.warning_message(), "Keep 1 week", queue=False)
        with p.served() as app:
            answer = app.http.post(
                f"/telegram/{WEBHOOK_SECRET}",
                json=update,
                headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
            )
        assert (answer.status_code, answer.text) == (200, "OK\n")
        assert p.telegram.answers[0]["text"].startswith(f"Kept trainer-8 (runpod:{pod}) until")
        assert action_of(p.to_deadline(), pod) == "protect"
        p.w.advance(24 * 6)
        assert action_of(p.run(), pod) == "protect", "a week"
        assert p.w.runpod.mutations == []


def test_an_ntfy_action_link_keeps_the_pod(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-9")
        p.warn()
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        keep = published.actions[0]
        assert keep["action"] == "http" and keep["url"].startswith(f"{PUBLIC}/act/")
        with p.served() as app:
            # What the ntfy app sends when the button is tapped: a POST, no body, no Origin.
            done = app.http.post(link_path(keep["url"]))
            again = app.http.post(link_path(keep["url"]))
        assert done.status_code == 200, done.text
        assert done.text.startswith(f"Kept trainer-9 (runpod:{pod}) until ")
        assert done.text.rstrip().endswith("by action link.")
        assert (again.status_code, again.text) == (404, "unknown, used or expired action link\n")
        assert action_of(p.to_deadline(), pod) == "protect"
        assert p.w.runpod.mutations == []
        [record] = p.actions()
        assert (record.by, record.via) == ("action link", "action link")


def test_barks_tap_opens_a_page_that_keeps_the_pod(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, bark=True) as p:
        assert p.bark is not None
        pod = str(p.w.vast.add_instance(actual_status="stopped", label="<b>vast & co</b>"))
        p.warn()
        [push] = [x for x in p.bark.pushes if "will be terminated" in x["title"]]
        assert push["url"].startswith(f"{PUBLIC}/act/")
        with p.served() as app:
            page = app.http.get(link_path(push["url"]), headers={"Accept": "text/html"})
            assert page.status_code == 200
            assert page.headers["content-type"] == "text/html; charset=utf-8"
            html = page.text
            assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
            assert "&lt;b&gt;vast &amp; co&lt;/b&gt;" in html and "<b>vast" not in html
            # The main action first, and the others offered too.
            assert html.index("Keep 1 day") < html.index("Keep 1 week") < html.index("Terminate")
            assert p.actions() == [], "a GET changes nothing"
            done = app.http.post(
                link_path(push["url"]),
                data={"choice": "0"},
                headers={"Accept": "text/html", "Origin": PUBLIC},
            )
        assert done.status_code == 200
        assert "<h1>Done</h1>" in done.text and "Kept" in done.text
        assert action_of(p.to_deadline(), pod) == "protect"
        assert p.w.vast.mutations == []


def test_audit_and_status_show_the_action(tmp_path: Path) -> None:
    from reaper.interfaces import views

    with phone(tmp_path) as p:
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        assert p.telegram is not None
        p.telegram.press(p.warning_message(), "Keep 1 day")
        p.poll()
        actions = p.actions()
        audit = views.audit_json([], actions)
        [entry] = audit["actions"]
        assert entry["by"] == "@alice (Telegram user 42)" and entry["kind"] == "keep"
        assert entry["at"].endswith("Z") and entry["done"] is True
        assert "actions by people" in views.audit_table([], actions)
        store = p.w.store()
        data = views.status_json(
            p.settings,
            store.list_monitors(),
            store.last_reap(),
            store.history(),
            p.w.clock.now(),
            actions=actions,
        )
        store.close()
        json.dumps(data)
        assert data["actions"][0]["label"] == "Keep 1 day"
        assert any("Keep 1 day" in line for line in views.status_lines(data))

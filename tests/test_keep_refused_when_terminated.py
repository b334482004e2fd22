"""A keep of an instance already terminated is refused, and stores nothing: a Keep pressed under
a warning whose instance was terminated since (and the termination confirmed), by Telegram
button, action link or the status page's form, answers that it was already terminated, when, to
the minute. Only a confirmed termination or a listing that shows it terminated makes it so: an
instance merely missing from one listing can still be kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from reaper.core.models import AuditRecord, Instance, Listing
from reaper.core.terminated import Terminated, already_terminated
from reaper.core.units import utc
from tests.phone_support import Phone, link_path, phone
from tests.reap_support import action_of, cli, world
from tests.web_support import csrf_of, fleet, page_of

T0 = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)


def _terminated(p: Phone, pod: str) -> datetime:
    """Warn the pod, then the pass at its deadline terminates it (confirmed): when it asked."""
    p.warn()
    deadline = p.w.clock.now() + timedelta(hours=1)
    report = p.to_deadline()
    assert action_of(report, pod) == "terminate"
    assert [a.confirmed for a in report.actions if a.id == pod] == [True]
    return deadline


def _kept(p: Phone) -> dict[str, object]:
    store = p.w.store()
    try:
        return dict(store.history().kept)
    finally:
        store.close()


def test_a_keep_pressed_after_the_termination_says_so_and_keeps_nothing(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        asked = _terminated(p, pod)
        p.w.advance(2)
        p.telegram.press(p.warning_message(), "Keep 1 week")
        p.poll()
        refusal = (
            f"Not kept: trainer-7 (runpod:{pod}) was already terminated at {utc(asked)}"
            " (confirmed gone); nothing to keep."
        )
        assert p.telegram.answers[-1]["text"] == refusal
        assert p.telegram.message(p.warning_message().message_id).text.endswith(f"⛔ {refusal}")
        assert _kept(p) == {}
        [record] = p.actions()
        assert (record.kind, record.done, record.result) == ("keep", False, refusal)


def test_an_action_link_to_keep_a_terminated_instance_is_refused(tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="l40s-render")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        asked = _terminated(p, pod)
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        keep_week = published.actions[1]
        assert keep_week["label"] == "Keep 1 week"
        with p.served() as app:
            page = app.http.get(link_path(keep_week["url"])).text
            answer = app.http.post(link_path(keep_week["url"]))
        assert (
            f"Does nothing: l40s-render (runpod:{pod}) was already terminated at {utc(asked)}"
            " (confirmed gone)."
        ) in page
        assert answer.status_code == 409, answer.text
        assert answer.text == (
            f"Not kept: l40s-render (runpod:{pod}) was already terminated at {utc(asked)}"
            " (confirmed gone); nothing to keep.\n"
        )
        assert _kept(p) == {}


def test_the_status_page_refuses_to_keep_an_instance_terminated_since_its_listing(
    tmp_path: Path,
) -> None:
    with fleet(tmp_path) as f:
        page = page_of(f)
        key = f"runpod:{f.terminated_id}"
        answer = f.http.post("/keep", data={"instance": key, "for": "7d", "csrf": csrf_of(page)})
        assert answer.status_code == 409, answer.text
        [record] = [r for r in f.app.store.audit_log() if r.key == key]
        assert answer.text == (
            f"Not kept: old-run ({key}) was already terminated at {utc(record.requested_at)}"
            " (confirmed gone); nothing to keep.\n"
        )
        assert f.app.store.history().kept == {}


def test_an_instance_missing_from_one_listing_can_still_be_kept(tmp_path: Path) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        p.warn()
        entry = p.w.runpod.entry(pod)
        assert entry is not None
        p.w.runpod.remove_entry(pod)
        p.w.advance(0.25)
        p.run()
        p.telegram.press(p.warning_message(), "Keep 1 day")
        p.poll()
        assert p.telegram.answers[-1]["text"].startswith(f"Kept trainer-7 (runpod:{pod}) until")
        assert list(_kept(p)) == [f"runpod:{pod}"]


def _instance(state: str) -> Instance:
    return Instance(
        provider="runpod",
        account="a",
        id="p1",
        name="p",
        state=state,  # type: ignore[arg-type]
        raw_status=state.upper(),
    )


def _confirmed(at: datetime, result: str = "deleted", confirmed: bool = True) -> AuditRecord:
    return AuditRecord(
        provider="runpod",
        account="a",
        id="p1",
        name="p",
        reason="test",
        requested_at=at,
        result=result,  # type: ignore[arg-type]
        confirmed=confirmed,
    )


def test_what_makes_an_instance_already_terminated() -> None:
    def listing(at: datetime, state: str) -> Listing:
        return Listing(provider="runpod", account="a", at=at, instances=[_instance(state)])

    hour = timedelta(hours=1)
    # A confirmed termination asked after the listing that still shows it stopped.
    assert already_terminated("runpod:p1", [_confirmed(T0)], [listing(T0, "stopped")]) == (
        Terminated(at=T0, confirmed=True)
    )
    # ... and with no listing showing it at all.
    assert already_terminated("runpod:p1", [_confirmed(T0)], []) == Terminated(T0, True)
    # A listing that shows it terminated, without any record of ours.
    assert already_terminated("runpod:p1", [], [listing(T0, "terminated")]) == (
        Terminated(at=T0, confirmed=False)
    )
    # Not terminated: missing from the listings; a termination not confirmed, or never sent;
    # a listing taken after the confirmed termination that still shows it.
    assert already_terminated("runpod:p1", [], []) is None
    assert already_terminated("runpod:p1", [_confirmed(T0, confirmed=False)], []) is None
    assert already_terminated("runpod:p1", [_confirmed(T0, "not_sent")], []) is None
    assert (
        already_terminated("runpod:p1", [_confirmed(T0)], [listing(T0 + hour, "stopped")]) is None
    )


def test_reaper_keep_of_an_instance_terminated_since_the_last_listing_is_refused(
    tmp_path: Path,
) -> None:
    """The last listing still shows the pod (it was taken before the DELETE), but its
    termination is confirmed: `reaper keep` refuses, exit 2, one line, nothing stored; `--force`
    keeps it anyway, as for an id the listing does not show."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="trainer-7")
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.run()
        w.advance(23)
        w.run()
        w.advance(1)
        report = w.run()
        assert action_of(report, pod) == "terminate"
        refused = cli(w, "keep", f"runpod:{pod}")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        [line] = refused.stderr.strip().splitlines()
        assert f"runpod:{pod} was already terminated at" in line and "nothing to keep" in line
        store = w.store(read_only=True)
        try:
            assert store.history().kept == {}
        finally:
            store.close()
        assert cli(w, "keep", f"runpod:{pod}", "--force").returncode == 0


def test_terminate_now_of_an_instance_already_terminated_says_when(tmp_path: Path) -> None:
    """Not "not listed any more (gone already?)": the store knows it terminated it, and when."""
    with phone(tmp_path, telegram=False, ntfy=True) as p:
        assert p.ntfy is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="l40s-render")
        p.w.runpod.add_pod(status="RUNNING", name="witness")
        asked = _terminated(p, pod)
        [published] = [x for x in p.ntfy.published if "will be terminated" in x.payload["title"]]
        [terminate] = [a for a in published.actions if a["label"].startswith("Terminate")]
        with p.served() as app:
            answer = app.http.post(link_path(terminate["url"]))
        assert f"already terminated at {utc(asked)}" in answer.text, answer.text
        assert "gone already?" not in answer.text

"""Review: a due instance that the one gate refuses on every pass — because the fresh reading
right before the DELETE disagrees with the listing the same way each time — is an instance past
its deadline that the reaper will not terminate. When the reason is one a person may not intend
(the fresh reading cannot read its protection; the fresh reading never shows it), that is an
exemption like any other: named in an alert, and the pass exits 1 while it lasts. It must never
be a `hold` with exit 0 and no message, pass after pass, while the instance bills."""

from __future__ import annotations

from pathlib import Path

from emulators.server import Response
from tests.reap_support import World, action_of, world

PASSES_PAST_DEADLINE = 6


def _named_in_an_alert(w: World, instance_id: str) -> list[str]:
    """Alerts other than the warning itself that name the instance."""
    return [
        f"{a.event}: {a.title}"
        for a in w.notifier.alerts
        if a.event != "termination_warning" and instance_id in f"{a.title}\n{a.body}"
    ]


def test_a_pod_whose_fresh_reading_cannot_read_its_name_is_not_exempt_in_silence(
    tmp_path: Path,
) -> None:
    """RunPod's listing shows the pod's name; `GET /pods/{id}` (the read right before the
    DELETE) answers `name: null`. The plan says terminate, the gate says "protection cannot be
    read" — every pass, for ever."""
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED", name="trainer", volume_gb=50)
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        fresh = w.runpod.pod(pod)
        assert fresh is not None
        fresh["name"] = None
        w.runpod.answer_as("get", Response.json(200, fresh))

        codes: list[int] = []
        seen: list[str | None] = []
        for _ in range(PASSES_PAST_DEADLINE):
            report = w.run()
            seen.append(action_of(report, pod))
            codes.append(report.exit_code)
            w.advance(1)

        assert w.runpod.mutations == [], "nothing unreadable is deleted (this part holds)"
        assert "hold" in seen, seen
        assert set(codes) == {1}, f"past its deadline, exempt: {seen}, exit {codes}"
        assert _named_in_an_alert(w, pod), "an exemption a person may not intend is alerted"


def test_a_vast_id_filter_that_matches_nothing_is_not_an_exemption_in_silence(
    tmp_path: Path,
) -> None:
    """Vast's listing shows the stopped instance; the filtered listing the gate reads right
    before the DELETE (`select_filters` on its id) comes back complete and empty. "A filter
    that silently matched nothing only makes the pass delete nothing" — and say nothing."""
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped", label="job")
        w.vast.add_instance(actual_status="running", label="witness")
        w.reach_deadline()

        codes: list[int] = []
        seen: list[str | None] = []
        for _ in range(PASSES_PAST_DEADLINE):
            # The pass's listing answers as it is; the fresh read right after it, empty.
            w.vast.after_next("list", lambda: w.vast.empty_next("list"))
            report = w.run()
            seen.append(action_of(report, str(inst)))
            codes.append(report.exit_code)
            w.advance(1)

        assert w.vast.mutations == []
        assert w.vast.entry(inst) is not None
        assert "hold" in seen, seen
        assert set(codes) == {1}, f"past its deadline, never terminated: {seen}, exit {codes}"
        assert _named_in_an_alert(w, str(inst)), "an exemption a person may not intend is alerted"

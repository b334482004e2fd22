"""A due instance that the read right before its DELETE does not show (Vast's id-filtered read
comes back complete and empty) is an exemption: named once per episode in a "Needs you" alert,
exit 1 on every pass while it lasts — and its license held, so it is not warned again with a
deadline that the next pass would not keep either."""

from __future__ import annotations

from pathlib import Path

from tests.reap_support import events, world


def test_an_instance_the_fresh_read_misses_is_named_once_and_not_warned_again(
    tmp_path: Path,
) -> None:
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="stopped", label="job")
        w.vast.add_instance(actual_status="running", label="witness")
        w.reach_deadline()
        codes: list[int] = []
        for _ in range(6):
            w.vast.after_next("list", lambda: w.vast.empty_next("list"))
            report = w.run()
            codes.append(report.exit_code)
            [action] = [a for a in report.actions if a.id == str(inst)]
            assert (action.action, action.exempt) == ("hold", "fresh_read"), action
            w.advance(1)

        assert w.vast.mutations == []
        assert set(codes) == {1}
        assert events(w.notifier).count("termination_warning") == 1, "warned once, not again"
        needs_you = [a for a in w.notifier.alerts if a.event == "needs_you"]
        assert len(needs_you) == 1 and str(inst) in needs_you[0].title + needs_you[0].body

"""Issue 12.10: an id that is not one of the provider's ids is unknown, and a DELETE URL can
only ever name one instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reap_support import world


@pytest.mark.parametrize("bad_id", ["..", ".", "a/b", "%2e%2e", "", " rp1"])
def test_a_runpod_pod_with_a_path_like_id_is_unknown_and_never_deleted(
    tmp_path: Path, bad_id: str
) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="EXITED")
        raw = {**(w.runpod.pod(pod) or {}), "id": bad_id}
        w.runpod.remove_pod(pod)
        w.runpod.add_raw_pod(raw)
        w.reach_deadline()
        report = w.run()
        (listed,) = report.instances[:1]
        assert listed.state == "unknown"
        assert listed.id.startswith("unreadable-")
        assert report.actions == []
        assert w.runpod.mutations == []


def test_a_vast_id_of_thousands_of_digits_is_unknown_and_fails_nothing(tmp_path: Path) -> None:
    """Review finding: `int()` of 5,000 digits raises; the account must still list."""
    with world(tmp_path) as w:
        inst = w.vast.add_instance(actual_status="running")
        w.vast.add_raw_instance({**(w.vast.instance(inst) or {}), "id": "9" * 5000})
        report = w.run()
        assert report.errors == []
        assert any(i.id.startswith("unreadable-") for i in report.instances)

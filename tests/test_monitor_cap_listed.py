"""Junk hosts cannot use up REAPER_MAX_MONITORS against a real instance: the provider host of
an instance in the last listing (`runpod-<id>` of a listed pod) is always watchable; any
other host still meets the cap (403 with the reason)."""

from __future__ import annotations

from pathlib import Path

from tests.heartbeat_support import KEY, served
from tests.reap_support import world
from tests.settings_support import replaced


def test_a_listed_instance_is_watchable_past_a_cap_filled_by_junk(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pod = w.runpod.add_pod(status="RUNNING", name="trainer")
        w.run()  # the listing that shows the pod
        settings = replaced(w.settings, ping_key=KEY, max_monitors=3)
        with served(settings, clock=w.clock) as app:
            assert [app.ping(f"junk-{n}").status_code for n in range(3)] == [200] * 3
            refused = app.ping("junk-3")
            assert refused.status_code == 403 and "monitor limit reached" in refused.text
            assert app.ping(f"runpod-{pod}").status_code == 200
            assert app.store.get_monitor(f"runpod-{pod}") is not None
            assert app.ping("runpod-notlisted9").status_code == 403
            assert app.ping(f"runpod-{pod}", "fail").status_code == 200

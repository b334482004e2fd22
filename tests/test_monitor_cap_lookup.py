"""Past REAPER_MAX_MONITORS, the provider host of an instance started since the last listing is
watchable too: one lookup of that single instance shows it (at most one lookup per host an
hour, so a junk `runpod-<id>` host costs one provider read an hour and never a place)."""

from __future__ import annotations

from pathlib import Path

from tests.heartbeat_support import KEY, served
from tests.reap_support import World, world
from tests.settings_support import replaced


def reads_of(w: World, pod: str) -> int:
    return sum(1 for r in w.runpod.requests if r.method == "GET" and pod in r.path)


def test_an_instance_started_since_the_listing_is_found_past_the_cap(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.run()  # the last listing: before the pod existed
        pod = w.runpod.add_pod(status="RUNNING", name="new-trainer")
        settings = replaced(w.settings, ping_key=KEY, max_monitors=2)
        with served(settings, clock=w.clock) as app:
            assert [app.ping(f"junk-{n}").status_code for n in range(2)] == [200] * 2
            assert app.ping("junk-2").status_code == 403

            assert app.ping(f"runpod-{pod}").status_code == 200

            assert app.store.get_monitor(f"runpod-{pod}") is not None
            assert reads_of(w, pod) == 1
            assert app.ping(f"runpod-{pod}").status_code == 200  # placed: no lookup again
            assert reads_of(w, pod) == 1


def test_a_host_no_account_shows_is_looked_up_once_an_hour(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        w.run()
        settings = replaced(w.settings, ping_key=KEY, max_monitors=1)
        with served(settings, clock=w.clock) as app:
            assert app.ping("junk-0").status_code == 200
            refused = [app.ping("runpod-nosuchpod7").status_code for _ in range(3)]

            assert refused == [403] * 3
            assert reads_of(w, "nosuchpod7") == 1
            assert app.store.get_monitor("runpod-nosuchpod7") is None
            w.advance(1.01)
            assert app.ping("runpod-nosuchpod7").status_code == 403
            assert reads_of(w, "nosuchpod7") == 2


def test_a_host_of_an_unconfigured_provider_is_not_looked_up(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        settings = replaced(w.settings, ping_key=KEY, max_monitors=1, vast_accounts=())
        with served(settings, clock=w.clock) as app:
            assert app.ping("junk-0").status_code == 200
            assert app.ping("vast-123456").status_code == 403
            assert [r for r in w.vast.requests if "123456" in r.path] == []

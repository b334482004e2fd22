"""`reaper serve` stops within 10 s of SIGTERM even in the middle of a reap pass whose provider
never answers: the pass is given a short grace, then cancelled; its lease is released (the next
pass need not wait for it to expire), the process exits 0, and nothing is half-applied."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reaper.store.sqlite import SQLiteStore
from tests.hostile_support import HostileServer
from tests.serve_support import reaper_serve

RUNPOD_KEY = "rp-sigterm-key-24680"


def test_sigterm_mid_pass_stops_within_ten_seconds_and_frees_the_lease(tmp_path: Path) -> None:
    with HostileServer("hang") as provider:
        env = {
            "RUNPOD_API_KEY": f"main={RUNPOD_KEY}",
            "RUNPOD_API_URL": f"{provider.url}/v2",
            "RUNPOD_GRAPHQL_URL": f"{provider.url}/graphql",
        }
        with reaper_serve(tmp_path, **env) as serve:
            # The reap pass at start-up is listing, and the provider holds the listing.
            assert provider.requested.wait(20)
            signalled = time.monotonic()
            serve.proc.send_signal(signal.SIGTERM)
            code = serve.proc.wait(timeout=30)
            took = time.monotonic() - signalled
            output = serve.output()
        assert provider.client_gone.wait(5)
    assert code == 0
    assert took < 10, output
    assert "pass_cancelled" in output and "job=reap" in output
    assert "serve_stopped" in output
    assert RUNPOD_KEY not in output
    store = SQLiteStore(str(tmp_path / "state.db"))
    try:
        # Released, not left to expire: another pass takes it at once.
        assert store.acquire_lease("reap", "next-pass", datetime.now(UTC), timedelta(minutes=2))
        # Nothing was asked of the provider: no audit record, half-written or otherwise.
        assert store.audit_log() == []
    finally:
        store.close()

"""`reaper serve` on a disk that stops taking writes, then takes them again: a real process
whose file-size limit is lowered while it runs (RLIMIT_FSIZE through prlimit: every write to the
state files then fails, as on a full disk) answers pings 503 with `Retry-After`, says so once at
ERROR and alerts once, reports the cause on `/healthz`, and recovers by itself — one line — when
writes work again."""

from __future__ import annotations

import resource
from pathlib import Path

import httpx
import pytest

from tests.serve_support import KEY, reaper_serve

pytestmark = pytest.mark.skipif(
    not hasattr(resource, "prlimit"), reason="needs Linux prlimit to limit a running process"
)


def test_a_disk_that_stops_taking_writes_is_said_and_serve_recovers(tmp_path: Path) -> None:
    with reaper_serve(tmp_path) as serve:
        url = f"http://127.0.0.1:{serve.port}"
        with httpx.Client(base_url=url, timeout=10) as http:
            assert http.get(f"/ping/{KEY}/box").status_code == 200
            soft, hard = resource.prlimit(serve.proc.pid, resource.RLIMIT_FSIZE)
            resource.prlimit(serve.proc.pid, resource.RLIMIT_FSIZE, (0, hard))
            refused = [http.get(f"/ping/{KEY}/box") for _ in range(3)]
            health = http.get("/healthz")
            resource.prlimit(serve.proc.pid, resource.RLIMIT_FSIZE, (soft, hard))
            back = http.get(f"/ping/{KEY}/box")
            healthy = http.get("/healthz")
        serve.wait_for("store_recovered")
        output = serve.output()
    assert [r.status_code for r in refused] == [503, 503, 503]
    assert all(r.headers["retry-after"] == "30" for r in refused)
    assert health.status_code == 503
    assert health.json() == {"ok": False, "store": "disk I/O error"}
    assert back.status_code == 200 and healthy.json() == {"ok": True}
    said = [line.split()[1:3] for line in output.splitlines()]
    assert said.count(["ERROR", "store_failing"]) == 1
    assert said.count(["ERROR", "store_recovered"]) == 1
    assert "the disk that holds REAPER_STATE may be full or failing" in output
    # The alert went out (here to the log: no channel is configured), once.
    alerted = [line for line in output.splitlines() if "alert_event=store_failing" in line]
    assert len(alerted) == 1
    assert KEY not in output

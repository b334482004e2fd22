"""A cold ping stays cheap: importing the HTTP handler loads neither pydantic nor asyncio nor
a channel or provider client, an ordinary ping is answered at once — no event loop — with
none of them loaded, and every other route is still served, loading what it needs on first
use. Each check runs in a fresh interpreter, where the import is what a new Lambda container
pays. (How long it takes is bench/lambda.py's business.)"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ["pydantic", "asyncio", "httpx", "boto3", "reaper.interfaces.routes", "reaper.core.models"]


def _fresh(script: str, tmp_path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(tmp_path), json.dumps(HEAVY)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


APP = """
import json, sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import handlers.http
from reaper.clock import SystemClock
from reaper.settings.model import Settings, StateURL
from reaper.core.records import Monitor
from reaper.interfaces.http import App, Request, Response, respond
from reaper.store.sqlite import SQLiteStore

heavy = json.loads(sys.argv[2])
loaded = lambda: [m for m in heavy if m in sys.modules]
state = str(Path(sys.argv[1]) / "state.db")
settings = Settings(state=StateURL("sqlite", state), ping_key="k" * 24, admin_key="a" * 24)
store = SQLiteStore(state)
now = datetime.now(UTC)
store.put_monitor(Monitor(host="trainer", status="up", created_at=now, last_ping_at=now))


sent = []


class Recording:
    async def send(self, alert):
        sent.append(alert.event)
        return []


app = App(settings, store, Recording(), SystemClock(), channels=())
after_import = loaded()
"""


def test_importing_the_handler_loads_none_of_the_heavy_parts(tmp_path: Path) -> None:
    result = _fresh(
        """
        import json, sys
        import handlers.http, reaper.store.sqlite, reaper.store.dynamodb
        heavy = json.loads(sys.argv[2])
        print(json.dumps({"loaded": [m for m in heavy if m in sys.modules]}))
        """,
        tmp_path,
    )
    assert result["loaded"] == []


def test_an_ordinary_ping_is_answered_at_once_with_none_of_them(tmp_path: Path) -> None:
    result = _fresh(
        APP
        + """
answer = respond(Request("GET", "/ping/" + "k" * 24 + "/trainer", client="10.0.0.7"), app)
monitor = store.get_monitor("trainer")
print(json.dumps({
    "before": after_import,
    "immediate": isinstance(answer, Response),
    "status": answer.status if isinstance(answer, Response) else None,
    "logged": len(store.monitor_log("trainer")),
    "sent": sent,
    "after": loaded(),
}))
""",
        tmp_path,
    )
    assert result["before"] == [] and result["after"] == []
    assert (result["immediate"], result["status"], result["logged"]) == (True, 200, 1)
    assert result["sent"] == []


def test_a_ping_that_alerts_and_the_other_routes_load_what_they_need(tmp_path: Path) -> None:
    result = _fresh(
        APP
        + """
import asyncio

failing = respond(Request("GET", "/ping/" + "k" * 24 + "/trainer/fail"), app)
waits = not isinstance(failing, Response)
failed = asyncio.run(failing) if waits else failing
status = respond(Request("GET", "/status", {"authorization": "Bearer " + "a" * 24}), app)
status = asyncio.run(status) if not isinstance(status, Response) else status
print(json.dumps({
    "waits": waits,
    "fail_status": failed.status,
    "down": store.get_monitor("trainer").status,
    "sent": sent,
    "status_code": status.status,
    "monitors": [m["host"] for m in json.loads(status.body)["monitors"]],
    "after": loaded(),
}))
""",
        tmp_path,
    )
    assert result["waits"] is True and result["fail_status"] == 200
    assert result["down"] == "down" and result["sent"] == ["monitor_failed"]
    assert (result["status_code"], result["monitors"]) == (200, ["trainer"])
    loaded = result["after"]
    assert isinstance(loaded, list)
    assert {"pydantic", "asyncio", "reaper.interfaces.routes"} <= set(loaded)

"""`reaper reap` as a user runs it, against the emulators answering as the providers were seen
answering in 2026: the only instance of a Vast account confirmed gone by Vast's after-destroy
answer, one clear line for an account Vast refuses, rate-limits or has retired an endpoint
for (the other accounts going on, and the account recovering once the cause is gone), and
RunPod's retired GraphQL said once without failing a pass."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from emulators.clock import FakeClock
from tests.fakes.ntfy import NtfyFake
from tests.reap_support import VAST_KEY, cli, events, world

LAB_KEY = "vast-lab-key-9876543210"
TWO_VAST_ACCOUNTS = {"VAST_API_KEY": f"main={VAST_KEY},lab={LAB_KEY}"}


def test_the_only_instance_of_a_vast_account_is_confirmed_gone_without_an_alert(
    tmp_path: Path,
) -> None:
    now = datetime.now(UTC)
    with NtfyFake() as ntfy, world(tmp_path, start=now - timedelta(hours=24, minutes=30)) as w:
        instance = w.vast.add_instance(actual_status="stopped", label="last-run")
        w.run()  # first seen stopped
        w.advance(23)
        w.run()  # warned, and heard by a person
        assert "termination_warning" in events(w.notifier)
        # From here on the real clock: the CLI's, and the emulators' `Date`.
        w.set_clock(FakeClock(datetime.now(UTC)))
        result = cli(w, "reap", "--json", extra_env={"NTFY_URL": ntfy.topic_url})
        assert result.returncode == 0, result.stdout + result.stderr
        [action] = json.loads(result.stdout)["actions"]
        assert (action["id"], action["action"], action["confirmed"]) == (
            str(instance),
            "terminate",
            True,
        )
        assert w.vast.instance(instance) is None
        # Confirmed by the instance's own endpoint (the account's re-list is empty).
        shows = [r for r in w.vast.requests if r.kind == "show"]
        assert shows and all(r.status == 200 for r in shows)
        titles = [p.payload["title"] for p in ntfy.published]
        assert any("Terminated" in t for t in titles), titles
        assert not any("unconfirmed" in t.lower() for t in titles), titles


@pytest.mark.parametrize(
    ("cause", "words"),
    [
        ("refused", ["Vast refused the key: check VAST_API_KEY", "HTTP 404 (auth_error"]),
        ("retired", ["Vast has retired this endpoint", "HTTP 410 (deprecated_endpoint"]),
        ("rate_limited", ["rate limited by Vast", "HTTP 429 (API requests too frequent"]),
    ],
)
def test_an_account_vast_will_not_answer_is_one_line_and_the_others_go_on(
    tmp_path: Path, cause: str, words: list[str]
) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.vast.keys["lab"] = LAB_KEY
        on_main = w.vast.add_instance(actual_status="stopped", account="main")
        on_lab = w.vast.add_instance(actual_status="running", label="lab-job", account="lab")
        pod = w.runpod.add_pod(status="RUNNING", name="rp-job")
        env = dict(TWO_VAST_ACCOUNTS)
        if cause == "refused":
            # A real wrong key, answered as Vast has been seen answering one: 404 auth_error.
            w.vast.bad_key_mode = "404"
            env["VAST_API_KEY"] = f"main=vast-revoked-key-0000,lab={LAB_KEY}"
        else:
            w.vast.misbehave(cause, account="main")  # type: ignore[arg-type]
        result = cli(w, "reap", "--all", extra_env=env)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        [line] = [x for x in result.stdout.splitlines() if x.startswith("error:")]
        assert line.startswith("error: vast/main: "), line
        for expected in words:
            assert expected in line, (expected, line)
        # The other accounts go on; nothing of the failing one is inferred gone.
        assert str(on_lab) in result.stdout and pod in result.stdout
        assert str(on_main) not in result.stdout
        assert w.vast.mutations == []
        # Once the cause is gone, the account is read again.
        w.vast.misbehave(None, account="main")
        w.vast.bad_key_mode = "401"
        again = cli(w, "reap", "--all", extra_env=TWO_VAST_ACCOUNTS)
        assert again.returncode == 0, again.stdout + again.stderr
        assert str(on_main) in again.stdout and "error:" not in again.stdout


def test_retired_graphql_is_said_once_and_never_fails_a_pass(tmp_path: Path) -> None:
    with NtfyFake() as ntfy, world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.graphql_retired = 410
        w.runpod.add_pod(status="RUNNING", name="rp-job")
        for _ in range(2):
            result = cli(w, "reap", extra_env={"NTFY_URL": ntfy.topic_url})
            assert result.returncode == 0, result.stdout + result.stderr
            assert "error:" not in result.stdout
        said = [p.payload for p in ntfy.published if "balance" in p.payload["title"]]
        assert len(said) == 1, said
        assert "no longer readable" in said[0]["message"]

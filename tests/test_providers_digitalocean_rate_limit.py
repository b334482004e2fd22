"""DigitalOcean's rate limits (5,000 requests an hour, 250 a minute): a 429 storm is waited out
by the request layer (its `Retry-After`, the spent `ratelimit-*` window, backoff and a lower
concurrency), a window the headers say is spent holds the next request instead of earning a
429, and a storm that outlasts the attempts is an error for that account alone, in one line."""

from __future__ import annotations

from pathlib import Path

from emulators.digitalocean import DigitalOceanEmulator
from emulators.server import Response
from reaper.providers.base import HttpOptions
from tests.digitalocean_support import TOKEN, action_of, do_world, on_digitalocean

PATIENT = HttpOptions(
    timeout=2, max_attempts=5, backoff_base=0.001, backoff_cap=0.004, retry_after_cap=0.05
)


def test_a_429_storm_is_waited_out_and_the_listing_completes() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        ids = [server.add_droplet(status="off") for _ in range(3)]
        server.rate_limit_next(3, kind="list", retry_after=1)

        async def listing(client):  # type: ignore[no-untyped-def]
            return await client.list_instances(), client.http.stats

        fleet, stats = on_digitalocean(server, listing, options=PATIENT)
        statuses = [r.status for r in server.requests if r.kind == "list"]
    assert sorted(int(i.id) for i in fleet) == ids
    assert statuses == [429, 429, 429, 200]
    assert stats.throttled == 3
    # Each 429 said to wait (its `Retry-After`, its spent window), capped for the test.
    assert all(delay >= 0.05 for delay in stats.delays)


def test_a_spent_window_holds_the_next_request_instead_of_earning_a_429() -> None:
    """The quota is spent by the first request: its answer says so (`ratelimit-remaining: 0`,
    the reset a Unix time), and the client waits for the reset before the second."""
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        droplet = server.add_droplet(status="off")
        server.set_quota(1, window_seconds=0.05)

        async def list_then_read(client):  # type: ignore[no-untyped-def]
            await client.list_instances()
            return await client.lookup(str(droplet)), client.http.stats

        found, stats = on_digitalocean(server, list_then_read, options=PATIENT)
        statuses = [r.status for r in server.requests]
    assert found is not None
    assert stats.paced, "the spent window was waited out"
    assert statuses == [200, 200]


def test_a_storm_that_outlasts_the_attempts_fails_that_account_alone(tmp_path: Path) -> None:
    with do_world(tmp_path, accounts={"main": TOKEN, "lab": "dop_v1_lab_token_0002"}) as w:
        w.do.add_droplet(status="off")
        fine = w.do.add_droplet(status="off", account="lab")
        w.reach_deadline()
        limited = Response.json(
            429,
            {"id": "too_many_requests", "message": "API rate limit exceeded."},
            headers={"Retry-After": "0"},
        )
        w.do.answer_as("*", limited, account="main")
        report = w.run()
        (error,) = report.errors
        assert error.account == "main"
        assert error.message.startswith(
            "rate limited by DigitalOcean (reaper backed off; the next pass tries again)"
        )
        assert "API rate limit exceeded." in error.message and "\n" not in error.message
        assert action_of(report, fine) == "terminate"
        assert report.exit_code == 1

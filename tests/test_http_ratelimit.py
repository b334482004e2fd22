"""Rate limits: a flood on one host gets 429 with Retry-After while other hosts are still
answered; a flood from one client gets 429 on every route but /healthz; time refills."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from emulators.clock import FakeClock
from reaper.interfaces.api import Limits
from reaper.interfaces.ratelimit import Rate, TokenBuckets, retry_after
from tests.heartbeat_support import KEY, make_settings, served

LIMITS = Limits(
    per_client=Rate(capacity=60, per_second=1),
    per_host=Rate(capacity=5, per_second=0.1),
    alerts=Rate(capacity=2, per_second=0.01),
)


def test_a_flood_on_one_host_is_429_while_other_hosts_answer(tmp_path: Path) -> None:
    with served(make_settings(tmp_path), limits=LIMITS) as app:
        answers = [app.ping("flooded").status_code for _ in range(8)]
        assert answers == [200] * 5 + [429] * 3
        limited = app.ping("flooded")
        assert limited.headers["retry-after"] == "10"  # one token at 0.1/s
        for host in ("calm-1", "calm-2", "calm-3"):
            assert app.ping(host).status_code == 200
        app.advance(seconds=10)
        assert app.ping("flooded").status_code == 200


def test_a_keyless_flood_from_one_client_is_429_but_healthz_answers(tmp_path: Path) -> None:
    with served(make_settings(tmp_path), limits=LIMITS) as app:
        statuses = [app.ping(f"host-{i}", key="wrong").status_code for i in range(70)]
        assert statuses.count(404) == 60 and statuses[-1] == 429
        # An unknown route and a bad admin key spend the same budget: they reveal nothing.
        assert app.http.get("/nope").status_code == 429
        assert app.http.get("/status", headers={"Authorization": "Bearer x"}).status_code == 429
        assert app.http.get("/healthz").status_code == 200
        # Another client (the address uvicorn takes from a trusted proxy) is not limited.
        other = app.ping("host-x", key="wrong", headers={"X-Forwarded-For": "203.0.113.9"})
        assert other.status_code == 404
        app.advance(seconds=1)
        assert app.http.get("/nope").status_code == 404


def test_a_keyless_flood_from_a_shared_address_leaves_keyed_pings_alone(tmp_path: Path) -> None:
    """Vast puts several rented instances behind one address: a neighbour (or a stranger)
    without the key must not spend the budget of the instances' keyed pings."""
    with served(make_settings(tmp_path), limits=LIMITS) as app:
        for _ in range(70):
            app.ping("victim", key="not-the-key")
        assert app.ping("victim", key="not-the-key").status_code == 429
        response = app.ping("victim", "fail", method="POST", body=b"job died")
        assert response.status_code == 200
        assert app.events() == ["monitor_failed"]
        # Keyed pings of many hosts from one address are limited per host, not per client.
        assert [app.ping(f"host-{i}").status_code for i in range(70)] == [200] * 70


def test_alerts_are_limited_as_a_whole(tmp_path: Path) -> None:
    with served(make_settings(tmp_path), limits=LIMITS) as app:
        codes = [
            app.http.post(f"/alert/{KEY}", json={"text": f"n{i}"}).status_code for i in range(3)
        ]
        assert codes == [200, 200, 429]
        assert len(app.notifier.alerts) == 2


def test_token_bucket_refills_and_never_exceeds_capacity() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(Rate(capacity=2, per_second=1), clock)
    assert [buckets.take("k") for _ in range(3)] == [0.0, 0.0, 1.0]
    clock.advance(timedelta(hours=1))
    assert [buckets.take("k") for _ in range(3)] == [0.0, 0.0, 1.0]


def test_a_clock_stepping_back_does_not_drain_the_bucket() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(Rate(capacity=1, per_second=1), clock)
    assert buckets.take("k") == 0.0
    clock.advance(timedelta(seconds=-30))
    assert buckets.take("k") == pytest.approx(1.0)


def test_buckets_are_bounded_in_number() -> None:
    buckets = TokenBuckets(Rate(capacity=1, per_second=1), FakeClock(), max_keys=100)
    for i in range(1000):
        buckets.take(f"203.0.113.{i}")
    assert len(buckets) == 100


@pytest.mark.parametrize(("wait", "header"), [(0.01, "1"), (1.0, "1"), (1.2, "2"), (30, "30")])
def test_retry_after_is_whole_seconds_at_least_one(wait: float, header: str) -> None:
    assert retry_after(wait) == header

"""common.sh: the heartbeat host name, notify's JSON, short timeouts, and how each provider
answer to a self-destroy is read."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import PING_KEY, POD_KEY, SELF_KEY, VAST_KEY, Kit, no_secret_in
from tests.kit_fakes.recorder import Response


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.start(tmp_path) as k:
        yield k


DESTROY = 'kit_destroy_self; echo "rc=$? $KIT_DESTROY_MSG"'


@pytest.mark.parametrize(
    ("env", "host"),
    [
        ({"HEARTBEAT_HOST": "gpu-box.1", "RUNPOD_POD_ID": "p1"}, "gpu-box.1"),
        ({"RUNPOD_POD_ID": "abc123", "CONTAINER_ID": "42"}, "runpod-abc123"),
        ({"CONTAINER_ID": "4242"}, "vast-4242"),
        ({}, "test-box"),
        ({"HEARTBEAT_HOST": "my box/é!"}, "my-box----"),  # é is two bytes
        ({"HEARTBEAT_HOST": "x" * 150}, "x" * 100),
        ({"HEARTBEAT_HOST": ".."}, "unknown-host"),
    ],
)
def test_the_ping_goes_to_the_host_named_by_the_contract(
    kit: Kit, env: dict[str, str], host: str
) -> None:
    done = kit.source('kit_ping "" "hello"', **env)

    assert done.returncode == 0, done.stderr
    assert kit.pings() == [(host, None, "hello")]


def test_the_hostname_is_used_last_and_sanitised(kit: Kit) -> None:
    kit.fake("hostname", "weird host:name")

    kit.source("kit_ping start")

    assert kit.pings() == [("weird-host-name", "start", "")]


def test_notify_sends_well_formed_json_whatever_the_text(kit: Kit) -> None:
    text = 'quote " backslash \\ newline \n tab \t bell \x07 esc \x1b unicode é 中文 end'
    done = kit.source(
        'kit_notify critical "$MESSAGE" "$MESSAGE"', MESSAGE=text, HEARTBEAT_HOST="h1"
    )

    assert done.returncode == 0, done.stderr
    [request] = kit.http.matching("POST", r"/alert/.*")
    assert request.path == f"/alert/{PING_KEY}/h1"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.body) == {"title": f"h1: {text}", "body": text, "level": "critical"}


def test_without_urls_notify_and_ping_only_log(kit: Kit) -> None:
    done = kit.source(
        'kit_notify info "hi" && kit_ping 0 && echo ok', NOTIFY_URL=None, HEARTBEAT_URL=None
    )

    assert done.stdout.strip() == "ok"
    assert "notify (info): hi" in done.stderr
    assert kit.http.requests == []


def test_notify_and_ping_give_up_after_the_timeout(kit: Kit) -> None:
    """A server that accepts the connection and never answers holds nobody up."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        done = kit.source(
            'kit_notify info hi; echo "notify=$?"; kit_ping; echo "ping=$?"',
            NOTIFY_URL=f"{url}/alert/k",
            HEARTBEAT_URL=f"{url}/ping/k",
            KIT_HTTP_TIMEOUT="1",
        )
        elapsed = time.monotonic() - started

    assert elapsed < 4
    assert "notify=1" in done.stdout
    assert "ping=1" in done.stdout
    assert "notify failed (HTTP 000)" in done.stderr
    assert no_secret_in(done.stderr)
    assert "/ping/k" not in done.stderr


def test_runpod_404_with_the_last_key_counts_as_gone(kit: Kit) -> None:
    done = kit.source(DESTROY, RUNPOD_POD_ID="pod-1", RUNPOD_API_KEY=POD_KEY)

    assert "rc=0 RunPod pod pod-1 is already gone (HTTP 404: pod not found" in done.stdout
    assert kit.deleted_pods() == [("/v2/pods/pod-1", "pod", 404)]


def test_runpod_404_tries_the_self_key_before_calling_it_gone(kit: Kit) -> None:
    """RunPod's 404 also means "not visible to this key": the pod is only the self key's."""
    kit.add_pod("pod-1", account="self")

    done = kit.source(
        DESTROY, RUNPOD_POD_ID="pod-1", RUNPOD_API_KEY=POD_KEY, REAPER_SELF_KEY=SELF_KEY
    )

    assert kit.deleted_pods() == [("/v2/pods/pod-1", "pod", 404), ("/v2/pods/pod-1", "self", 204)]
    assert "rc=0 destroyed RunPod pod pod-1 (HTTP 204, with REAPER_SELF_KEY)" in done.stdout
    assert kit.runpod.pod("pod-1") is None


def test_every_key_refused_names_the_keys_never_their_values(kit: Kit) -> None:
    kit.add_pod("pod-1")
    wrong = {"RUNPOD_API_KEY": "expired-pod-key-111", "REAPER_SELF_KEY": "revoked-key-222"}

    done = kit.source(DESTROY, RUNPOD_POD_ID="pod-1", **wrong)

    assert "rc=1 destroying RunPod pod pod-1 failed: RUNPOD_API_KEY refused (HTTP 401" in (
        done.stdout
    )
    assert "REAPER_SELF_KEY refused (HTTP 401: invalid bearer token)" in done.stdout
    assert kit.runpod.pod("pod-1") is not None
    for value in wrong.values():
        assert value not in done.stdout + done.stderr


def test_a_cluster_pod_refusal_is_a_failure_with_the_reason(kit: Kit) -> None:
    kit.runpod.add_pod("pod-1", account="pod", cluster_id="cluster-9")

    done = kit.source(DESTROY, RUNPOD_POD_ID="pod-1", RUNPOD_API_KEY=POD_KEY)

    assert "rc=1 destroying RunPod pod pod-1 failed (HTTP 409: pod belongs to a cluster" in (
        done.stdout
    )


def test_vast_destroyed(kit: Kit) -> None:
    kit.vast.add_instance(77, account="instance")

    done = kit.source(DESTROY, CONTAINER_ID="77", CONTAINER_API_KEY=VAST_KEY)

    assert "rc=0 destroyed Vast instance 77 (HTTP 200, with CONTAINER_API_KEY)" in done.stdout
    assert kit.vast.instance(77) is None


def test_vast_not_found_counts_as_gone(kit: Kit) -> None:
    done = kit.source(DESTROY, CONTAINER_ID="77", CONTAINER_API_KEY=VAST_KEY)

    assert "rc=0 Vast instance 77 is already gone (HTTP 404: Instance not found" in done.stdout


@pytest.mark.parametrize("bad_key_mode", ["401", "404"])
def test_vast_refusing_the_key_is_not_gone(kit: Kit, bad_key_mode: str) -> None:
    """Vast has answered 404 for a bad key: only error "not_found" means gone."""
    kit.vast.add_instance(77, account="instance")
    kit.vast.bad_key_mode = bad_key_mode  # type: ignore[assignment]

    done = kit.source(DESTROY, CONTAINER_ID="77", CONTAINER_API_KEY="stale-container-key")

    assert (
        f"rc=1 destroying Vast instance 77 failed: CONTAINER_API_KEY refused (HTTP {bad_key_mode}"
        in (done.stdout)
    )
    assert kit.vast.instance(77) is not None


def test_vast_rate_limited_is_a_failure(kit: Kit) -> None:
    kit.vast.add_instance(77, account="instance")
    kit.vast.rate_limit_next(1, kind="delete")

    done = kit.source(DESTROY, CONTAINER_ID="77", CONTAINER_API_KEY=VAST_KEY)

    assert "rc=1 destroying Vast instance 77 failed (HTTP 429" in done.stdout


def test_vast_success_false_is_a_failure(kit: Kit) -> None:
    """Not an answer the emulator gives: a 200 whose body says it did not work."""
    kit.http.on(
        "DELETE",
        r"/vast/api/v0/instances/77/",
        lambda _r, _m: Response(200, '{"success": false, "msg": "try later"}'),
    )

    done = kit.source(DESTROY, CONTAINER_ID="77", CONTAINER_API_KEY=VAST_KEY)

    assert "rc=1 destroying Vast instance 77 failed (HTTP 200: try later" in done.stdout


def test_without_an_identity_nothing_is_destroyed(kit: Kit) -> None:
    done = kit.source(DESTROY, RUNPOD_API_KEY=POD_KEY)

    assert "rc=1 cannot tell which instance this is" in done.stdout
    assert kit.http.requests == []


def test_without_a_key_nothing_is_called(kit: Kit) -> None:
    done = kit.source(DESTROY, RUNPOD_POD_ID="pod-1")

    assert "rc=1 no key to destroy RunPod pod pod-1: set RUNPOD_API_KEY or REAPER_SELF_KEY" in (
        done.stdout
    )
    assert kit.http.requests == []


def test_an_id_that_is_not_an_id_is_never_put_in_a_url(kit: Kit) -> None:
    done = kit.source(DESTROY, RUNPOD_POD_ID="../../other", RUNPOD_API_KEY=POD_KEY)

    assert "rc=1 the instance id '../../other' is not an id" in done.stdout
    assert kit.http.requests == []


def test_a_provider_that_does_not_answer_is_a_failure_not_a_hang(kit: Kit) -> None:
    done = kit.source(
        DESTROY,
        RUNPOD_POD_ID="pod-1",
        RUNPOD_API_KEY=POD_KEY,
        RUNPOD_API_URL="http://127.0.0.1:9/v2",
    )

    assert "rc=1 destroying RunPod pod pod-1 failed (HTTP 000, with RUNPOD_API_KEY)" in done.stdout

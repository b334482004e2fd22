"""Terminating: idempotent, "not_found" only when the provider clearly says so (a Vast 404
that is an auth error is an error), cluster members refused, and the emulators' deletes that
stay visible for a few reads (or never go) so that the reaper's confirmation can be tested."""

from __future__ import annotations

import pytest

from emulators import RunPodEmulator, VastEmulator
from reaper.providers.base import HttpOptions, ProviderError
from reaper.providers.runpod.client import RunPodClient
from reaper.providers.vast.client import VastClient
from tests.provider_support import on_runpod, on_vast

FAST = HttpOptions(timeout=2, max_attempts=3, backoff_base=0.001, backoff_cap=0.004)
RP_KEY = "rp-test-key-0004"
VAST_KEY = "vast-test-key-0004"


def test_runpod_delete_is_idempotent() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        pod_id = server.add_pod(status="EXITED")

        async def twice(client: RunPodClient) -> tuple[str, str, list[str]]:
            first = await client.terminate(pod_id)
            second = await client.terminate(pod_id)
            return first, second, [i.id for i in await client.list_instances()]

        first, second, left = on_runpod(server, RP_KEY, twice, FAST)
        deletes = [r for r in server.mutations if r.kind == "delete"]
    assert (first, second) == ("deleted", "not_found")
    assert left == []
    assert [r.status for r in deletes] == [204, 404]


def test_runpod_cluster_member_delete_is_refused_with_409() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        pod_id = server.add_pod(status="EXITED", cluster_id="cluster_abc123")
        with pytest.raises(ProviderError, match="409") as caught:
            on_runpod(server, RP_KEY, lambda c: c.terminate(pod_id), FAST)
        assert server.pod(pod_id) is not None
    assert "cluster" in caught.value.message


def test_runpod_pod_of_another_account_is_not_found_and_untouched() -> None:
    with RunPodEmulator({"main": RP_KEY, "other": "rp-other-key-9"}) as server:
        theirs = server.add_pod(account="other", status="EXITED")
        assert on_runpod(server, RP_KEY, lambda c: c.terminate(theirs), FAST) == "not_found"
        assert server.pod(theirs) is not None


def test_runpod_deleted_pod_stays_terminated_for_n_reads_then_goes() -> None:
    with RunPodEmulator({"main": RP_KEY}, delete_linger_reads=2) as server:
        pod_id = server.add_pod(status="EXITED")

        async def scenario(client: RunPodClient) -> list[list[tuple[str, str]]]:
            await client.terminate(pod_id)
            reads = []
            for _ in range(3):
                reads.append([(i.id, i.state) for i in await client.list_instances()])
            return reads

        reads = on_runpod(server, RP_KEY, scenario, FAST)
    assert reads == [[(pod_id, "terminated")], [(pod_id, "terminated")], []]


def test_runpod_delete_that_never_confirms_leaves_the_pod_exited() -> None:
    with RunPodEmulator({"main": RP_KEY}, delete_never_confirms=True) as server:
        pod_id = server.add_pod(status="RUNNING")

        async def scenario(client: RunPodClient) -> tuple[str, list[str]]:
            outcome = await client.terminate(pod_id)
            return outcome, [i.state for i in await client.list_instances()]

        assert on_runpod(server, RP_KEY, scenario, FAST) == ("deleted", ["stopped"])


def test_runpod_wrong_key_is_401_and_an_error() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        pod_id = server.add_pod()
        with pytest.raises(ProviderError, match="401"):
            on_runpod(server, "rp-wrong-key-0", lambda c: c.terminate(pod_id), FAST)
        assert server.pod(pod_id) is not None


def test_vast_destroy_is_idempotent() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        instance_id = server.add_instance(actual_status="stopped")

        async def twice(client: VastClient) -> tuple[str, str]:
            return await client.terminate(str(instance_id)), await client.terminate(
                str(instance_id)
            )

        assert on_vast(server, VAST_KEY, twice, FAST) == ("deleted", "not_found")
        assert [r.path for r in server.mutations] == [f"/api/v0/instances/{instance_id}/"] * 2


def test_vast_404_that_is_an_auth_error_is_a_provider_error_not_not_found() -> None:
    with VastEmulator({"main": VAST_KEY}, bad_key_mode="404") as server:
        instance_id = server.add_instance(actual_status="stopped")
        with pytest.raises(ProviderError, match="check VAST_API_KEY") as caught:
            on_vast(server, "vast-expired-key", lambda c: c.terminate(str(instance_id)), FAST)
        assert server.instance(instance_id) is not None
    assert "HTTP 404 (auth_error: Invalid user key)" in caught.value.message


def test_vast_404_with_another_error_is_not_not_found_either() -> None:
    from emulators.server import Response

    with VastEmulator({"main": VAST_KEY}) as server:
        instance_id = server.add_instance(actual_status="stopped")
        server.answer_as("delete", Response.json(404, {"success": False, "error": "invalid_user"}))
        with pytest.raises(ProviderError, match="not `not_found`") as caught:
            on_vast(server, VAST_KEY, lambda c: c.terminate(str(instance_id)), FAST)
    assert "invalid_user" in caught.value.message


def test_vast_404_without_an_error_field_is_a_provider_error() -> None:
    from emulators.server import EmulatorServer, Request, Response

    class Bare404(EmulatorServer):
        def dispatch(self, request: Request) -> Response:
            return Response.json(404, {"detail": "Not found."})

    with Bare404({"main": VAST_KEY}) as server, pytest.raises(ProviderError, match="404"):
        on_vast(server, VAST_KEY, lambda c: c.terminate("42"), FAST)  # type: ignore[arg-type]


def test_vast_success_false_is_a_provider_error() -> None:
    from emulators.server import EmulatorServer, Request, Response

    class Refuses(EmulatorServer):
        def dispatch(self, request: Request) -> Response:
            return Response.json(200, {"success": False, "error": "busy", "msg": "try later"})

    with Refuses({"main": VAST_KEY}) as server, pytest.raises(ProviderError, match="busy"):
        on_vast(server, VAST_KEY, lambda c: c.terminate("42"), FAST)  # type: ignore[arg-type]


def test_vast_destroyed_instance_lingers_for_n_reads_then_goes() -> None:
    with VastEmulator({"main": VAST_KEY}, delete_linger_reads=2) as server:
        instance_id = server.add_instance(actual_status="stopped")

        async def scenario(client: VastClient) -> list[int]:
            await client.terminate(str(instance_id))
            return [len(await client.list_instances()) for _ in range(3)]

        assert on_vast(server, VAST_KEY, scenario, FAST) == [1, 1, 0]


def test_vast_destroy_that_never_confirms_leaves_it_stopped() -> None:
    with VastEmulator({"main": VAST_KEY}, delete_never_confirms=True) as server:
        instance_id = server.add_instance(actual_status="running")

        async def scenario(client: VastClient) -> tuple[str, list[str]]:
            outcome = await client.terminate(str(instance_id))
            return outcome, [i.state for i in await client.list_instances()]

        assert on_vast(server, VAST_KEY, scenario, FAST) == ("deleted", ["stopped"])


@pytest.mark.parametrize(
    "bad_id", ["", ".", "..", "12/../13", "a/../b", "a%2Fb", "-x", "x y", "unreadable-3"]
)
def test_ids_that_are_not_ids_are_refused_without_a_call(bad_id: str) -> None:
    """Ids are checked against each provider's strict pattern: `..` would send the DELETE to
    the API root, `.` to the whole pods collection."""
    with RunPodEmulator({"main": RP_KEY}) as runpod, VastEmulator({"main": VAST_KEY}) as vast:
        with pytest.raises(ProviderError, match="refusing"):
            on_vast(vast, VAST_KEY, lambda c: c.terminate(bad_id), FAST)
        with pytest.raises(ProviderError, match="refusing"):
            on_runpod(runpod, RP_KEY, lambda c: c.terminate(bad_id), FAST)
        assert vast.mutations == [] and runpod.mutations == []


def test_a_runpod_delete_names_exactly_one_pod() -> None:
    with RunPodEmulator({"main": RP_KEY}) as server:
        pod = server.add_pod(status="EXITED")
        assert on_runpod(server, RP_KEY, lambda c: c.terminate(pod), FAST) == "deleted"
        assert [r.path for r in server.mutations] == [f"/v2/pods/{pod}"]


def test_listing_and_reading_make_no_mutating_call() -> None:
    with RunPodEmulator({"main": RP_KEY}) as runpod, VastEmulator({"main": VAST_KEY}) as vast:
        runpod.add_pod(status="EXITED")
        vast.add_instance(actual_status="stopped")

        async def read_runpod(client: RunPodClient) -> None:
            await client.list_instances()
            await client.balance()
            await client.volumes()

        async def read_vast(client: VastClient) -> None:
            await client.list_instances()
            await client.balance()
            await client.volumes()

        on_runpod(runpod, RP_KEY, read_runpod, FAST)
        on_vast(vast, VAST_KEY, read_vast, FAST)
        assert runpod.mutations == [] and vast.mutations == []
        assert runpod.count("balance") == 1 and vast.count("balance") == 1


def test_keys_never_appear_in_any_url() -> None:
    with RunPodEmulator({"main": RP_KEY}) as runpod, VastEmulator({"main": VAST_KEY}) as vast:
        pod_id = runpod.add_pod(status="EXITED")
        instance_id = vast.add_instance(actual_status="stopped")
        for _ in range(30):
            vast.add_instance()

        async def all_runpod(client: RunPodClient) -> None:
            await client.list_instances()
            await client.terminate(pod_id)
            await client.balance()
            await client.volumes()

        async def all_vast(client: VastClient) -> None:
            await client.list_instances()
            await client.terminate(str(instance_id))
            await client.balance()
            await client.volumes()

        on_runpod(runpod, RP_KEY, all_runpod, FAST)
        on_vast(vast, VAST_KEY, all_vast, FAST)
        records = runpod.requests + vast.requests
    assert len(records) >= 9
    assert all(r.account == "main" for r in records)
    for record in records:
        assert RP_KEY not in record.url and VAST_KEY not in record.url
        assert "api_key" not in record.query

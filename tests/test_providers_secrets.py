"""Secrets that ride along in provider answers (RunPod `env`; Vast `extra_env`,
`jupyter_token`, `onstart`, ssh keys) and the account keys themselves never reach a parsed
`Instance`, an exception message or a log line — including when an answer is malformed or
an error body echoes the request."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Iterator

import pytest

from emulators import RunPodEmulator, VastEmulator
from emulators.server import EmulatorServer, Request, Response
from reaper.core.models import Instance
from reaper.providers.base import ProviderError
from reaper.providers.runpod.client import RunPodClient
from reaper.providers.vast.client import VastClient
from reaper.settings.parse import Account
from tests.log_support import json_log
from tests.provider_support import FAST, runpod_listing_error

RP_KEY = "rp-account-key-SECRET-0005"
VAST_KEY = "vast-account-key-SECRET-0005"
ENV_SECRET = "hf_envSECRETvalue123"
EXTRA_ENV_SECRET = "wandb-extra-env-SECRET-456"
JUPYTER_SECRET = "jupyterSECRETtoken789abcdef"
ONSTART_SECRET = "onstart-SECRET-curl-token-000"
SECRETS = [RP_KEY, VAST_KEY, ENV_SECRET, EXTRA_ENV_SECRET, JUPYTER_SECRET, ONSTART_SECRET]


@pytest.fixture
def captured_log() -> Iterator[io.StringIO]:
    with json_log() as stream:
        yield stream


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text
    assert "SECRET" not in text


def fleet_with_secrets(
    runpod: RunPodEmulator, vast: VastEmulator
) -> tuple[list[Instance], list[Instance]]:
    runpod.add_pod(status="EXITED", env={"HF_TOKEN": ENV_SECRET, "JUPYTER_PASSWORD": ENV_SECRET})
    broken = runpod.add_pod(status="EXITED", env={"HF_TOKEN": ENV_SECRET})
    runpod.modify_pod(broken, locked="perhaps", runtime={"gpus": "many"})
    vast.add_instance(
        actual_status="stopped",
        extra_env=[["WANDB_API_KEY", EXTRA_ENV_SECRET], ["-p 8080:8080", "1"]],
        jupyter_token=JUPYTER_SECRET,
        onstart=f"curl -H 'x: {ONSTART_SECRET}' https://example.com",
        ssh_key=f"ssh-ed25519 AAAA{ONSTART_SECRET}",
    )
    vast.add_raw_instance(
        {"id": "x", "extra_env": [["K", EXTRA_ENV_SECRET]], "jupyter_token": JUPYTER_SECRET}
    )

    async def go() -> tuple[list[Instance], list[Instance]]:
        rp = RunPodClient(
            Account("runpod", "main", RP_KEY), runpod.rest_url, runpod.graphql_url, FAST
        )
        va = VastClient(Account("vast", "main", VAST_KEY), vast.url, FAST)
        try:
            return await rp.list_instances(), await va.list_instances()
        finally:
            await rp.aclose()
            await va.aclose()

    return asyncio.run(go())


def test_no_secret_in_parsed_instances_or_logs(
    captured_log: io.StringIO, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with RunPodEmulator({"main": RP_KEY}) as runpod, VastEmulator({"main": VAST_KEY}) as vast:
        runpod.fail_next("list", 503)
        vast.rate_limit_next(1)
        pods, instances = fleet_with_secrets(runpod, vast)
    assert len(pods) == 2 and len(instances) == 2
    assert {p.state for p in pods} == {"stopped", "unknown"}
    for instance in pods + instances:
        assert_clean(instance.model_dump_json())
        assert_clean(repr(instance))
    events = captured_log.getvalue()
    assert "provider_retry" in events and "provider_unreadable_instance" in events
    assert_clean(events)
    assert_clean("\n".join(r.getMessage() for r in caplog.records))


def test_no_key_in_a_provider_error_even_when_the_error_body_echoes_it(
    captured_log: io.StringIO,
) -> None:
    class Echo(EmulatorServer):
        provider = "runpod"

        def dispatch(self, request: Request) -> Response:
            echoed = request.headers.get("authorization", "")
            detail = f"bad request from {echoed} with HF_TOKEN={ENV_SECRET}"
            return Response.json(400, {"title": "Bad Request", "status": 400, "detail": detail})

        def error(self, request: Request, status: int, detail: str) -> Response:
            return Response.json(status, {"title": "x", "status": status, "detail": detail})

    with Echo({"main": RP_KEY}) as server:
        server.fail_next("*", 500, count=1)
        error = runpod_listing_error(server, RP_KEY)
    message = str(error)
    assert "HTTP 400" in message
    assert RP_KEY not in message and RP_KEY not in error.message
    assert "[redacted]" in message
    assert RP_KEY not in captured_log.getvalue()


def test_no_key_in_errors_when_the_provider_is_unreachable() -> None:
    with VastEmulator({"main": VAST_KEY}) as server:
        server.set_down("refuse")

        async def go() -> None:
            client = VastClient(Account("vast", "main", VAST_KEY), server.url, FAST)
            try:
                await client.terminate("123")
            finally:
                await client.aclose()

        with pytest.raises(ProviderError) as caught:
            asyncio.run(go())
    assert_clean(str(caught.value))
    assert_clean(repr(caught.value.args))

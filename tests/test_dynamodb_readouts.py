"""`reaper audit`, `status` and `report` against the deployed stack's table:
`REAPER_STATE=dynamodb://<table>` takes its region from AWS_REGION / AWS_DEFAULT_REGION or
`?region=`; a missing region, missing credentials or a table that is not there is one line and
exit 2. A real DynamoDB protocol server (moto's server mode) on loopback stands in for AWS."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from emulators.aws import start_moto_server
from reaper.core.models import AuditRecord, Monitor
from reaper.store.dynamodb import DynamoDBStore, create_table
from tests.cli_process import run_reaper
from tests.reap_support import world

TABLE = "reaper-prod"
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@pytest.fixture(scope="module")
def dynamodb_url() -> Iterator[str]:
    server = start_moto_server()
    try:
        for region in ("eu-west-1", "us-east-2"):
            _seed(_client(server.url, region))
        yield server.url
    finally:
        server.stop()


def _client(url: str, region: str) -> Any:
    return boto3.client(
        "dynamodb", endpoint_url=url, region_name=region, **_lower(FAKE_CREDENTIALS)
    )


def _lower(env: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in env.items()}


def _seed(client: Any) -> None:
    create_table(TABLE, client)
    store = DynamoDBStore(TABLE, client=client)
    now = datetime.now(UTC)
    store.record_termination(
        AuditRecord(
            provider="runpod",
            account="main",
            id="old-pod-1",
            name="sweep-lr-3e-4",
            reason="stopped for 1d, limit 1d",
            requested_at=now - timedelta(hours=2),
            cost_per_hour=0.055,
            result="deleted",
            confirmed=True,
        )
    )
    store.put_monitor(Monitor(host="runpod-llm-a1", status="up", created_at=now, last_ping_at=now))


def reaper(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),  # no ~/.aws: only what the test gives
        "AWS_EC2_METADATA_DISABLED": "true",  # never ask an instance metadata service
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
    }
    return run_reaper(args, env={**base, **env}, cwd=tmp_path)


@pytest.mark.parametrize(
    ("state", "region_env"),
    [
        (f"dynamodb://{TABLE}", {"AWS_REGION": "eu-west-1"}),
        (f"dynamodb://{TABLE}", {"AWS_DEFAULT_REGION": "us-east-2"}),
        (f"dynamodb://{TABLE}?region=eu-west-1", {}),
        # `?region=` names the deployment's region even where the shell defaults to another.
        (f"dynamodb://{TABLE}?region=us-east-2", {"AWS_REGION": "ap-south-1"}),
    ],
)
def test_audit_and_status_read_the_deployed_table(
    tmp_path: Path, dynamodb_url: str, state: str, region_env: dict[str, str]
) -> None:
    env = {"REAPER_STATE": state, "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_url}
    env |= FAKE_CREDENTIALS | region_env
    audit = reaper(tmp_path, "audit", "--json", **env)
    assert audit.returncode == 0, audit.stderr
    [record] = json.loads(audit.stdout)["terminations"]
    assert (record["id"], record["name"], record["confirmed"]) == (
        "old-pod-1",
        "sweep-lr-3e-4",
        True,
    )
    status = reaper(tmp_path, "status", **env)
    assert status.returncode == 0, status.stderr
    assert "runpod-llm-a1" in status.stdout and "monitors 1 up" in status.stdout
    text = reaper(tmp_path, "audit", **env)
    assert "sweep-lr-3e-4" in text.stdout and "UTC" in text.stdout


def test_report_reads_the_table_and_the_providers(tmp_path: Path, dynamodb_url: str) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        w.runpod.add_pod("p1", name="trainer", cost=0.79)
        env = {k: v for k, v in w.env().items() if k != "REAPER_STATE"}
        env |= FAKE_CREDENTIALS | {"AWS_ENDPOINT_URL_DYNAMODB": dynamodb_url}
        done = reaper(
            tmp_path, "report", REAPER_STATE=f"dynamodb://{TABLE}?region=eu-west-1", **env
        )
    assert done.returncode == 0, done.stderr
    assert "spend now $0.79/h" in done.stdout
    assert "reaped in 24h: 1" in done.stdout and "sweep-lr-3e-4" in done.stdout


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["audit", "status", "report"])
def test_a_missing_region_is_one_line(tmp_path: Path, command: str) -> None:
    line = _one_line(
        reaper(
            tmp_path,
            command,
            REAPER_STATE=f"dynamodb://{TABLE}",
            RUNPOD_API_KEY="main=rp-key-0123456789",
            **FAKE_CREDENTIALS,
        )
    )
    assert line.startswith("reaper: REAPER_STATE: dynamodb:// needs an AWS region")
    assert "AWS_REGION" in line and "?region=" in line


@pytest.mark.parametrize("command", ["audit", "status"])
def test_missing_credentials_are_one_line(tmp_path: Path, dynamodb_url: str, command: str) -> None:
    line = _one_line(
        reaper(
            tmp_path,
            command,
            REAPER_STATE=f"dynamodb://{TABLE}?region=eu-west-1",
            AWS_ENDPOINT_URL_DYNAMODB=dynamodb_url,
        )
    )
    assert line.startswith("reaper: REAPER_STATE: dynamodb:// needs AWS credentials")


def test_a_table_that_is_not_there_is_one_line(tmp_path: Path, dynamodb_url: str) -> None:
    line = _one_line(
        reaper(
            tmp_path,
            "audit",
            REAPER_STATE="dynamodb://reaper-staging?region=eu-west-1",
            AWS_ENDPOINT_URL_DYNAMODB=dynamodb_url,
            **FAKE_CREDENTIALS,
        )
    )
    assert "the DynamoDB table does not exist" in line


def test_a_malformed_region_is_one_line(tmp_path: Path) -> None:
    line = _one_line(reaper(tmp_path, "audit", REAPER_STATE=f"dynamodb://{TABLE}?region=Europe"))
    assert line.startswith("reaper: REAPER_STATE: expected dynamodb://<table>")

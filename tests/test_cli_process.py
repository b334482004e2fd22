"""The tests' way of running `reaper <args>` (`tests/cli_process.run_reaper`, forked from a
zygote that imported reaper once) answers exactly as a new `python -m reaper` does: the same
output, the same exit status, the environment and directory it is given and nothing of the
command before it, a kill at its timeout, and a file-size limit that holds."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli_process import CANARY, run_reaper
from tests.hostile_support import HostileServer

# No AWS configuration but what a test gives: no metadata service, no files in ~/.aws.
NO_AWS = {
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "{home}/no-config",
    "AWS_SHARED_CREDENTIALS_FILE": "{home}/no-credentials",
}


def both_ways(
    monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str], cwd: Path
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    monkeypatch.delenv("REAPER_TEST_CLI", raising=False)
    forked = run_reaper(args, env=env, cwd=cwd)
    monkeypatch.setenv("REAPER_TEST_CLI", "fresh")
    fresh = run_reaper(args, env=env, cwd=cwd)
    monkeypatch.delenv("REAPER_TEST_CLI")
    return forked, fresh


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["--version"], {}),
        (["reap", "--help"], {}),
        (["status"], {}),  # no state yet: exit 2, one line naming REAPER_STATE
        (["reap"], {"REAPER_STOPPED_TTL": "24"}),  # a bad value: exit 2, the variable named
        (["reap", "--json"], {}),  # no key at all
        (["monitor", "list"], {"REAPER_STATE": "sqlite:///{home}/s.db"}),
        (["status", "--json"], {"REAPER_STATE": "sqlite:///{home}/s.db"}),
        (["no-such-command"], {}),  # argparse's usage and exit 2
        # boto3 is imported in the zygote: what it reads from the environment, it reads late
        (["status"], {"REAPER_STATE": "dynamodb://reaper-state", **NO_AWS}),  # no region
        (
            ["status"],
            {"REAPER_STATE": "dynamodb://reaper-state", "AWS_REGION": "eu-west-1", **NO_AWS},
        ),
    ],
)
def test_a_forked_command_answers_as_a_new_interpreter_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], extra: dict[str, str]
) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    env |= {name: value.format(home=tmp_path) for name, value in extra.items()}
    forked, fresh = both_ways(monkeypatch, args, env, tmp_path)

    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )
    assert forked.stdout or forked.stderr  # something to compare


def test_a_command_sees_only_its_own_environment(tmp_path: Path) -> None:
    """A bad value given to one command is not there for the next, and neither the zygote's
    environment nor the test process's reaches a command."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    bad = run_reaper(["reap"], env=env | {"REAPER_STOPPED_TTL": "24"}, cwd=tmp_path)
    assert bad.returncode == 2 and "REAPER_STOPPED_TTL" in bad.stderr

    after = run_reaper(["reap"], env=env, cwd=tmp_path)
    assert "REAPER_STOPPED_TTL" not in after.stderr and CANARY not in after.stderr
    assert "RUNPOD_API_KEY" in after.stderr  # no key: the next complaint

    os.environ["REAPER_STOPPED_TTL"] = "24"
    try:
        outside = run_reaper(["reap"], env=env, cwd=tmp_path)
    finally:
        del os.environ["REAPER_STOPPED_TTL"]
    assert "REAPER_STOPPED_TTL" not in outside.stderr


def test_a_command_runs_in_the_directory_it_is_given(tmp_path: Path) -> None:
    """A relative state path is relative to the command's directory, not the zygote's."""
    (tmp_path / "here").mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "REAPER_STATE": "sqlite:///s.db"}
    done = run_reaper(["keep", "host:trainer", "--for", "1h"], env=env, cwd=tmp_path / "here")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "here" / "s.db").exists()


def test_a_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    with HostileServer("hang") as slow:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "RUNPOD_API_KEY": "main=rp-timeout-key-000001",
            "RUNPOD_API_URL": f"{slow.url}/v2",
            "RUNPOD_GRAPHQL_URL": f"{slow.url}/graphql",
            "REAPER_STATE": f"sqlite:///{tmp_path / 's.db'}",
        }
        started = time.monotonic()
        with pytest.raises(subprocess.TimeoutExpired):
            run_reaper(["reap"], env=env, cwd=tmp_path, timeout=2)
        assert time.monotonic() - started < 30
        assert slow.requested.is_set()  # it was waiting on the provider, not starting
        assert slow.client_gone.wait(10)  # killed: its connection closed with it
        # the next command runs: nothing of the killed one is left in the way
        assert run_reaper(["--version"], env=env, cwd=tmp_path).returncode == 0


def test_a_file_size_limit_of_zero_holds_in_the_command(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "REAPER_STATE": f"sqlite:///{tmp_path / 's.db'}",
    }
    refused = run_reaper(
        ["keep", "host:t", "--for", "1h"], env=env, cwd=tmp_path, file_size_limit=0
    )
    assert refused.returncode != 0
    assert "REAPER_STATE" in refused.stderr and "Traceback" not in refused.stderr
    allowed = run_reaper(["keep", "host:t", "--for", "1h"], env=env, cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr

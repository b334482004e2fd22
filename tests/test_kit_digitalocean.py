"""The kit on a DigitalOcean GPU droplet: its host is `do-<droplet id>`, the id read from the
metadata service only after `/metadata/v1.json` names a `droplet_id` (the same address serves
other clouds' metadata: nothing is guessed), and it destroys itself with the token the user
gives it (`DIGITALOCEAN_TOKEN`), `DELETE /v2/droplets/<id>` → 204. `IDLE_ACTION=stop` powers
the droplet off and says that it saves nothing: a powered-off droplet bills its full price.

No test here (or anywhere) sends anything to the real metadata address: the harness points
DIGITALOCEAN_METADATA_URL at a loopback fake and refuses any other."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.digitalocean import server_error
from tests.kit_fakes.harness import (
    DO_TOKEN,
    POD_KEY,
    Kit,
    no_secret_in,
    refuse_the_real_metadata_address,
)

DROPLET = 3164444
HOST = f"do-{DROPLET}"
WHO = 'kit_identify; echo "host=$KIT_HOST provider=$KIT_PROVIDER id=$KIT_ID"'


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.on_droplet(tmp_path, DROPLET) as k:
        yield k


def metadata_paths(kit: Kit) -> list[str]:
    return [r.path for r in kit.metadata.http.requests]


def test_the_host_is_do_and_the_droplet_id_from_the_metadata(kit: Kit) -> None:
    done = kit.source(WHO)

    assert done.stdout.strip() == f"host={HOST} provider=digitalocean id={DROPLET}"
    assert metadata_paths(kit) == ["/metadata/v1.json", "/metadata/v1/id"]


@pytest.mark.parametrize(
    ("listing", "id_answer"),
    [
        (None, str(DROPLET)),  # v1.json not there (another cloud), /id answering anyway
        ('{"instance-id": "i-0abc", "region": "us-east-1"}', "12345"),  # another cloud's JSON
        ('{"droplet_id": 777}', "778"),  # the two disagree
        ('{"droplet_id": "777"}', "777"),  # not DigitalOcean's shape
        ("droplet_id: 777", "777"),  # not JSON
    ],
    ids=["no v1.json", "another cloud", "disagree", "id as a string", "not json"],
)
def test_no_droplet_id_is_ever_guessed(tmp_path: Path, listing: str | None, id_answer: str) -> None:
    with Kit.start(tmp_path) as kit:
        if listing is not None:
            kit.metadata.answer("/metadata/v1.json", listing, "application/json")
        kit.metadata.answer("/metadata/v1/id", id_answer)

        done = kit.source(
            WHO + '; kit_destroy_self; echo "$KIT_DESTROY_MSG"', DIGITALOCEAN_TOKEN=DO_TOKEN
        )

    assert done.stdout.splitlines()[0] == "host=test-box provider= id="
    assert "cannot tell which instance this is" in done.stdout
    assert kit.droplets.calls == []
    if listing is None:
        assert metadata_paths(kit) == ["/metadata/v1.json"]  # /id is never asked alone


def test_an_id_from_runpod_or_vast_wins_and_the_metadata_is_not_asked(kit: Kit) -> None:
    done = kit.source(WHO, RUNPOD_POD_ID="pod-1")

    assert done.stdout.strip() == "host=runpod-pod-1 provider=runpod id=pod-1"
    assert metadata_paths(kit) == []


def test_heartbeat_host_names_the_monitor_and_the_droplet_is_still_destroyed(kit: Kit) -> None:
    done = kit.run("run.sh", "true", HEARTBEAT_HOST="my-trainer")

    assert done.returncode == 0
    assert {host for host, _, _ in kit.pings()} == {"my-trainer"}
    assert kit.droplets.calls == [("DELETE", f"/droplets/{DROPLET}", 204)]


def test_run_sh_destroys_the_droplet_with_the_users_token(kit: Kit) -> None:
    done = kit.run("run.sh", "true")

    assert done.returncode == 0
    assert kit.events() == ["ping:start", "ping", "notify", "ping:0", "ping:bye", "delete"]
    [delete] = kit.deletes()
    assert delete.path == f"/do/v2/droplets/{DROPLET}"
    assert delete.bearer == DO_TOKEN
    assert kit.droplets.droplets == {}
    assert f"destroyed DigitalOcean droplet {DROPLET} (HTTP 204, with DIGITALOCEAN_TOKEN)" in (
        done.stderr
    )
    assert kit.titles() == [f"{HOST}: job done, destroying"]
    assert {host for host, _, _ in kit.pings()} == {HOST}
    assert no_secret_in(done.stdout + done.stderr)


def test_without_a_token_it_says_it_cannot_and_notifies_once(kit: Kit) -> None:
    done = kit.run("run.sh", "true", DIGITALOCEAN_TOKEN=None)

    assert done.returncode == 0
    assert kit.events() == ["ping:start", "notify", "ping:fail"]
    [alert] = kit.notifies()
    assert alert.title == f"{HOST}: job done, CANNOT destroy, still billing"
    assert f"no key to destroy DigitalOcean droplet {DROPLET}: set DIGITALOCEAN_TOKEN" in alert.body
    assert kit.droplets.calls == []


def test_a_droplet_already_gone_counts_as_destroyed(kit: Kit) -> None:
    kit.droplets.droplets.clear()

    done = kit.source('kit_destroy_self; echo "rc=$? $KIT_DESTROY_MSG"')

    assert f"rc=0 DigitalOcean droplet {DROPLET} is already gone (HTTP 404: The resource" in (
        done.stdout
    )


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("dop_v1_revoked", "failed: DIGITALOCEAN_TOKEN refused (HTTP 401: Unable to authenticate"),
        (DO_TOKEN, "failed (HTTP 500: Server was unable to give you a response., with"),
    ],
    ids=["refused", "server error"],
)
def test_a_destroy_that_fails_says_why(kit: Kit, token: str, expected: str) -> None:
    if token == DO_TOKEN:
        kit.droplets.fail_next(server_error())

    done = kit.source('kit_destroy_self; echo "rc=$? $KIT_DESTROY_MSG"', DIGITALOCEAN_TOKEN=token)

    assert f"rc=1 destroying DigitalOcean droplet {DROPLET} {expected}" in done.stdout
    assert str(DROPLET) in kit.droplets.droplets
    assert "dop_v1_revoked" not in done.stdout + done.stderr


def test_idle_watch_destroys_an_idle_droplet(kit: Kit) -> None:
    done = kit.watch(loops=10, IDLE_LIMIT="2")

    assert done.returncode == 0, done.stderr
    assert kit.droplets.calls == [("DELETE", f"/droplets/{DROPLET}", 204)]
    assert kit.titles()[-1] == f"{HOST}: idle 2 min, destroying"


def test_idle_action_stop_powers_off_and_says_it_saves_nothing(kit: Kit) -> None:
    done = kit.watch(loops=10, IDLE_LIMIT="2", IDLE_ACTION="stop")

    assert done.returncode == 0, done.stderr
    assert kit.deletes() == []
    [action] = kit.http.matching("POST", rf"/do/v2/droplets/{DROPLET}/actions")
    assert json.loads(action.body) == {"type": "power_off"}
    assert action.bearer == DO_TOKEN
    assert kit.droplets.droplets == {str(DROPLET): "off"}
    warning, stopping = kit.notifies()
    assert warning.title == f"{HOST}: idle 1 min, powering off in 1 min"
    assert stopping.title == f"{HOST}: idle 2 min, powering off"
    for notify in (warning, stopping):
        assert "bills its full price: powering off saves nothing until it is destroyed" in (
            notify.body
        )
    assert f"powered off DigitalOcean droplet {DROPLET} (HTTP 201, with DIGITALOCEAN_TOKEN)" in (
        done.stderr
    )
    assert "IDLE_ACTION=stop on DigitalOcean" in done.stderr


def test_the_harness_never_lets_the_kit_ask_the_real_metadata_address(kit: Kit) -> None:
    assert kit.env["DIGITALOCEAN_METADATA_URL"].startswith("http://127.0.0.1:")
    for url in (None, "http://169.254.169.254/metadata/v1", "http://metadata.internal/v1"):
        with pytest.raises(AssertionError, match="real metadata address"):
            kit._env({"DIGITALOCEAN_METADATA_URL": url})
    with pytest.raises(AssertionError):
        refuse_the_real_metadata_address({"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY})

"""DigitalOcean's settings, as the contract names them: `DIGITALOCEAN_TOKEN` (several accounts as
`name=token,...`, as for the other providers) and `DIGITALOCEAN_API_URL` (default
`https://api.digitalocean.com/v2`). A user with only `DIGITALOCEAN_TOKEN` set gets a working
reaper: `reaper reap` lists their GPU droplets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from emulators.digitalocean import DigitalOceanEmulator
from reaper.app.settings import known_variables, load_settings
from reaper.app.wiring import make_clients
from reaper.providers.digitalocean import DEFAULT_API_URL, DigitalOceanSettings
from reaper.providers.plugins import label
from reaper.settings.parse import ConfigError
from tests.cli_process import run_reaper

TOKEN = "dop_v1_settings_token_0001"


def providers(env: dict[str, str]) -> DigitalOceanSettings:
    found = load_settings(env, dotenv=None).provider("digitalocean")
    assert isinstance(found, DigitalOceanSettings)
    return found


def test_one_token_is_one_account_at_the_default_url() -> None:
    settings = providers({"DIGITALOCEAN_TOKEN": TOKEN})
    (account,) = settings.accounts
    assert (account.provider, account.name, account.key) == ("digitalocean", "1", TOKEN)
    assert settings.api_url == DEFAULT_API_URL == "https://api.digitalocean.com/v2"
    assert label("digitalocean") == "DigitalOcean"


def test_several_accounts_are_named_tokens() -> None:
    settings = providers(
        {
            "DIGITALOCEAN_TOKEN": f"team={TOKEN}, lab=dop_v1_other_0002",
            "DIGITALOCEAN_API_URL": "http://127.0.0.1:9/v2/",
        }
    )
    assert [(a.name, a.key) for a in settings.accounts] == [
        ("team", TOKEN),
        ("lab", "dop_v1_other_0002"),
    ]
    assert settings.api_url == "http://127.0.0.1:9/v2"
    clients = make_clients(load_settings({"DIGITALOCEAN_TOKEN": "a=x,b=y"}, dotenv=None))
    assert [(c.provider, c.account) for c in clients] == [
        ("digitalocean", "a"),
        ("digitalocean", "b"),
    ]


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"DIGITALOCEAN_TOKEN": "a=x,a=y"}, "DIGITALOCEAN_TOKEN"),
        ({"DIGITALOCEAN_TOKEN": "main=dop v1"}, "DIGITALOCEAN_TOKEN"),
        ({"DIGITALOCEAN_TOKEN": "dop_v1_\u201cquoted\u201d"}, "DIGITALOCEAN_TOKEN"),
        ({"DIGITALOCEAN_API_URL": "api.digitalocean.com/v2"}, "DIGITALOCEAN_API_URL"),
    ],
)
def test_a_bad_value_names_its_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(env, dotenv=None)
    assert caught.value.variable == variable
    assert "dop v1" not in str(caught.value), "the token is never echoed"


def test_the_token_is_a_secret_and_both_variables_are_known() -> None:
    settings = load_settings({"DIGITALOCEAN_TOKEN": f"main={TOKEN}"}, dotenv=None)
    assert TOKEN in settings.secrets()
    assert {"DIGITALOCEAN_TOKEN", "DIGITALOCEAN_API_URL"} <= known_variables()


def test_without_any_key_reap_names_the_digitalocean_token_too() -> None:
    with pytest.raises(ConfigError, match="DIGITALOCEAN_TOKEN: set at least one"):
        load_settings({}, dotenv=None).require_provider_keys()


def test_a_user_with_only_a_digitalocean_token_gets_a_working_reaper(tmp_path: Path) -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        off = server.add_droplet(status="off", name="forgotten-h100")
        server.add_droplet(gpu=False, status="off", name="web-server")
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "DIGITALOCEAN_TOKEN": TOKEN,
            "DIGITALOCEAN_API_URL": server.api_url,
            "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
        }
        done = run_reaper(["reap", "--json"], env=env, cwd=tmp_path)
        listings = [r.query for r in server.requests if r.kind == "list"]
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["errors"] == []
    assert [(i["provider"], i["id"], i["state"]) for i in report["instances"]] == [
        ("digitalocean", str(off), "stopped")
    ]
    assert listings and all("type=gpus" in q for q in listings)
    assert TOKEN not in done.stdout + done.stderr

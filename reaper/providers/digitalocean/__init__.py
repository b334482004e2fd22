"""DigitalOcean GPU Droplets: every fact reaper knows about them, and how to read the settings.

The client (`client.py`, API v2 over httpx) is imported only when a client is made. What is
here is light: the settings (`DIGITALOCEAN_TOKEN`, `DIGITALOCEAN_API_URL`), the heartbeat host
prefix (`do-<dropletId>`), the id grammar, and DigitalOcean's words when its balance or volumes
cannot be read.

Why a guard matters most here: a powered-off droplet bills its full hourly price until it is
destroyed ("Droplets that are powered off are still billable. To stop incurring charges on a
Droplet, destroy it." — doctl's `droplet-action power-off` help), so a forgotten H100 droplet
costs as much switched off as running.
"""

from __future__ import annotations

from dataclasses import dataclass

from reaper.providers.base import Kit, ProviderPlugin
from reaper.settings.parse import Env, ProviderSettings, SettingsReader, parse_accounts, parse_url

NAME = "digitalocean"
LABEL = "DigitalOcean"
KEY_VARIABLE = "DIGITALOCEAN_TOKEN"
URL_VARIABLE = "DIGITALOCEAN_API_URL"
DEFAULT_API_URL = "https://api.digitalocean.com/v2"
# Where the kit reads its own droplet's id inside a droplet (its default is the link-local
# metadata address; tests point it at a loopback fake).
METADATA_VARIABLE = "DIGITALOCEAN_METADATA_URL"
HOST_PREFIX = "do-"
# Droplet ids are integers (3164444, 448543583); far past any issued. `int()` of a much longer
# run of digits is slow, and past 4300 digits it raises.
MAX_ID_DIGITS = 20


@dataclass(frozen=True)
class DigitalOceanSettings(ProviderSettings):
    provider = NAME
    api_url: str = DEFAULT_API_URL


def read_settings(env: Env) -> DigitalOceanSettings:
    """Always the URL (checked even without a token); accounts only when a token is set."""
    api_url = env.get(URL_VARIABLE)
    url = DEFAULT_API_URL if api_url is None else parse_url(api_url, URL_VARIABLE)
    tokens = env.get(KEY_VARIABLE)
    accounts = () if tokens is None else parse_accounts(tokens, KEY_VARIABLE, NAME)
    return DigitalOceanSettings(accounts=accounts, api_url=url)


def canonical_id(value: object) -> str | None:
    """A droplet id as the canonical digits of a positive integer, or None.

    ASCII digits only (`str.isdigit()` also accepts other scripts' digits, which `int()` reads
    as different numbers), never a bool (JSON `true` is not droplet 1), never zero: whatever
    is not such an id could make a DELETE name something other than one droplet.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_ID_DIGITS:
        return None
    number = int(text)
    return str(number) if number > 0 else None


def _canonical_text(text: str) -> str | None:
    return canonical_id(text)


# The token scope each read needs (DigitalOcean's custom scopes, named in its API reference).
_SCOPES = {"balance": "billing:read", "volumes": "block_storage:read"}


def fetch_note(account: str, what: str) -> tuple[str, str] | None:
    """A balance or volume listing that fails is most often a token without the scope for it:
    reaping needs only `droplet:read` and `droplet:delete`."""
    scope = _SCOPES.get(what)
    if scope is None:
        return None
    return (
        f"{LABEL} {account}: {what} unreadable",
        "Reaping and every other guard go on. A custom-scoped token reads this only with the"
        f" {scope} scope; without it, this guard is off for the account.",
    )


SETTINGS = SettingsReader(
    variables=(KEY_VARIABLE, URL_VARIABLE),
    secret_variables=(KEY_VARIABLE,),
    read=read_settings,
    key_variable=KEY_VARIABLE,
)
PLUGIN = ProviderPlugin(
    name=NAME,
    label=LABEL,
    host_prefix=HOST_PREFIX,
    canonical_id=_canonical_text,
    client="reaper.providers.digitalocean.client:make",
    settings=SETTINGS,
    env_prefix="DIGITALOCEAN_",
    kit=Kit(
        URL_VARIABLE, DEFAULT_API_URL, variables=(METADATA_VARIABLE,), template="user-data script"
    ),
    emulator="emulators.digitalocean:DigitalOceanEmulator",
    id_noun="dropletId",
    fetch_note=fetch_note,
)

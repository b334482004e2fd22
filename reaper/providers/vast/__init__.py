"""Vast.ai: every fact reaper knows about it, and how to read its settings.

The client (`client.py`, the v1 list and v0 instance endpoints over httpx) is imported only
when a client is made. What is here is light: the settings (`VAST_API_KEY`, `VAST_API_URL`),
the heartbeat host prefix (`vast-<instanceId>`) and the id grammar.
"""

from __future__ import annotations

from dataclasses import dataclass

from reaper.providers.base import Kit, ProviderPlugin
from reaper.settings.parse import Env, ProviderSettings, SettingsReader, parse_accounts, parse_url

NAME = "vast"
LABEL = "Vast"
KEY_VARIABLE = "VAST_API_KEY"
DEFAULT_API_URL = "https://console.vast.ai"
# Far past any id Vast has issued (they are 8 digits today); `int()` of a much longer run of
# digits is slow, and past 4300 it raises.
MAX_ID_DIGITS = 20


@dataclass(frozen=True)
class VastSettings(ProviderSettings):
    provider = NAME
    api_url: str = DEFAULT_API_URL


def read_settings(env: Env) -> VastSettings:
    """Always the URL (checked even without a key); accounts only when a key is set."""
    api_url = env.get("VAST_API_URL")
    url = DEFAULT_API_URL if api_url is None else parse_url(api_url, "VAST_API_URL")
    keys = env.get(KEY_VARIABLE)
    accounts = () if keys is None else parse_accounts(keys, KEY_VARIABLE, NAME)
    return VastSettings(accounts=accounts, api_url=url)


def canonical_id(value: object) -> str | None:
    """A Vast id as the canonical digits `int()` and the filter agree on, or None.

    ASCII only: `str.isdigit()` also accepts other scripts' digits ("١٢"), which `int()` reads
    as 12, so the confirmation filter would ask about instance 12 while the pass tracks "١٢".
    """
    if isinstance(value, bool) or value is None or not isinstance(value, int | str):
        return None
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_ID_DIGITS:
        return None
    return str(int(text))


def _canonical_text(text: str) -> str | None:
    return canonical_id(text)


SETTINGS = SettingsReader(
    variables=(KEY_VARIABLE, "VAST_API_URL"),
    secret_variables=(KEY_VARIABLE,),
    read=read_settings,
    key_variable=KEY_VARIABLE,
)
PLUGIN = ProviderPlugin(
    name=NAME,
    label=LABEL,
    host_prefix="vast-",
    canonical_id=_canonical_text,
    client="reaper.providers.vast.client:make",
    settings=SETTINGS,
    env_prefix="VAST_",
    kit=Kit("VAST_API_URL", DEFAULT_API_URL, template="on-start script"),
    emulator="emulators.vast:VastEmulator",
)

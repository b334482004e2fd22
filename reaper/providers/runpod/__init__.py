"""RunPod: every fact reaper knows about it, and how to read its settings.

The client (`client.py`, REST v2 over httpx) is imported only when a client is made. What is
here is light: the settings (`RUNPOD_API_KEY`, `RUNPOD_API_URL`, `RUNPOD_GRAPHQL_URL`), the
heartbeat host prefix (`runpod-<podId>`), the id grammar, and the words RunPod's facts take in
alerts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reaper.providers.base import UNREADABLE_ID_PREFIX, Kit, ProviderPlugin
from reaper.settings.parse import Env, ProviderSettings, SettingsReader, parse_accounts, parse_url

NAME = "runpod"
LABEL = "RunPod"
KEY_VARIABLE = "RUNPOD_API_KEY"
DEFAULT_API_URL = "https://api.runpod.io/v2"
DEFAULT_GRAPHQL_URL = "https://api.runpod.io/graphql"

# A pod id as RunPod spells them ("xedezhzb9la3ye"): letters and digits, with inner `-`/`_`
# allowed defensively. Anything else ("", ".", "..", a slash, a percent sign) is unreadable:
# it could make a DELETE name the collection or the API root instead of one pod.
POD_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?")


@dataclass(frozen=True)
class RunPodSettings(ProviderSettings):
    provider = NAME
    api_url: str = DEFAULT_API_URL
    graphql_url: str = DEFAULT_GRAPHQL_URL


def read_settings(env: Env) -> RunPodSettings:
    """Always the URLs (checked even without a key); accounts only when a key is set."""
    api_url = env.get("RUNPOD_API_URL")
    graphql_url = env.get("RUNPOD_GRAPHQL_URL")
    keys = env.get(KEY_VARIABLE)
    return RunPodSettings(
        accounts=() if keys is None else parse_accounts(keys, KEY_VARIABLE, NAME),
        api_url=DEFAULT_API_URL if api_url is None else parse_url(api_url, "RUNPOD_API_URL"),
        graphql_url=DEFAULT_GRAPHQL_URL
        if graphql_url is None
        else parse_url(graphql_url, "RUNPOD_GRAPHQL_URL"),
    )


def valid_pod_id(text: str) -> bool:
    return POD_ID.fullmatch(text) is not None and not text.startswith(UNREADABLE_ID_PREFIX)


def canonical_id(text: str) -> str | None:
    """A pod id as the listing spells it, or None: pod ids are taken as they are."""
    return text if valid_pod_id(text) else None


def fetch_note(account: str, what: str) -> tuple[str, str] | None:
    """The balance comes from GraphQL, which RunPod retires in early 2027 (it then answers 410
    Gone: the reason in the alert says so)."""
    if what != "balance":
        return None
    return (
        f"RunPod {account}: balance unreadable (GraphQL)",
        "Reaping and every other guard go on; the low-balance and runway alerts are off for"
        " this account while its balance cannot be read (RunPod retires GraphQL in early 2027).",
    )


def fetch_episode(account: str, what: str) -> str | None:
    """The GraphQL balance's failures are one episode of their own per account."""
    return f"graphql:{account}" if what == "balance" else None


SETTINGS = SettingsReader(
    variables=(KEY_VARIABLE, "RUNPOD_API_URL", "RUNPOD_GRAPHQL_URL"),
    secret_variables=(KEY_VARIABLE,),
    read=read_settings,
    key_variable=KEY_VARIABLE,
)
PLUGIN = ProviderPlugin(
    name=NAME,
    label=LABEL,
    host_prefix="runpod-",
    canonical_id=canonical_id,
    client="reaper.providers.runpod.client:make",
    settings=SETTINGS,
    env_prefix="RUNPOD_",
    # Inside a pod the kit reads RUNPOD_POD_ID (and RunPod's pod-scoped RUNPOD_API_KEY).
    kit=Kit(
        "RUNPOD_API_URL", DEFAULT_API_URL, variables=("RUNPOD_POD_ID",), template="start command"
    ),
    emulator="emulators.runpod:RunPodEmulator",
    id_noun="podId",
    fetch_note=fetch_note,
    fetch_episode=fetch_episode,
)

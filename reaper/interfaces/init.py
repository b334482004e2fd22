"""`reaper init`: a `.env` skeleton with fresh keys, printed — never written.

A newcomer's first file is the one they get wrong: a short ping key anyone could guess, the
admin key reused as the ping key, an instance template that names a host the reaper does not
cross-check. So the skeleton comes with a ping key and an admin key drawn from the operating
system's randomness (192 bits each, URL-safe), every provider's and channel's variable named by
its own plugin, and the lines to put in an instance template. Nothing is written: an existing
`.env` is never overwritten, and the keys exist only in what the person copies.
"""

from __future__ import annotations

import secrets

from reaper.app.settings import channel_readers, provider_readers
from reaper.providers.plugins import plugins
from reaper.settings.model import Settings

# 24 random bytes: 32 characters of URL-safe base64 (keys travel in URL paths).
KEY_BYTES = 24
_PLACEHOLDER_URL = "https://<where reaper answers>"


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def skeleton(settings: Settings) -> str:
    """The `.env` text: providers, channels, the two keys, then the instance lines."""
    ping_key, admin_key = new_key(), new_key()
    base = settings.public_url or _PLACEHOLDER_URL
    templates = ", ".join(f"a {p.label} {p.kit.template}" for p in plugins() if p.kit.template)
    lines = [
        "# reaper .env — printed by `reaper init`; nothing was written. Save what you keep as",
        "# .env beside where you run reaper (or as SSM parameters on AWS: docs/aws.md).",
        "",
        "# Provider accounts, at least one. Several: name=key,name2=key2",
        *(f"{reader.key_variable}=" for reader in provider_readers()),
        "",
        "# Where alerts reach you, at least one (a termination needs a warning a person saw)",
    ]
    for reader in channel_readers():
        if reader.channel_variables:
            lines += [f"{name.strip()}=" for name in reader.channel_variables.split(" and ")]
    lines += [
        "",
        "# Fresh keys: the ping key goes to your instances, the admin key stays with you.",
        f"REAPER_PING_KEY={ping_key}",
        f"REAPER_ADMIN_KEY={admin_key}",
        "# The https address people and instances reach reaper at (the status page, alerts' links)",
        f"REAPER_PUBLIC_URL={settings.public_url or ''}",
        "# Start in observe mode for a week: everything but the destroying.",
        "REAPER_MODE=observe",
        "",
        f"# In your instance template ({templates}), before",
        "# anything else — the kit in infra/instance/ reads these:",
        f"#   HEARTBEAT_URL={base}/ping/{ping_key}",
        f"#   NOTIFY_URL={base}/alert/{ping_key}",
    ]
    return "\n".join(lines)


def init_command(settings: Settings) -> int:
    print(skeleton(settings))
    return 0

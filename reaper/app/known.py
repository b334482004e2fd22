"""The names reaper knows, and a warning for a name that looks like a misspelt one of them.

`REAPER_STOPED_TTL=48h` is not an error the settings can see: the variable is simply not read,
the default (24h) applies, and a pod is terminated a day early. So every variable that carries
one of the product's prefixes and is not a name reaper (or its deployment, or its on-instance
kit) knows is named on stderr, with the nearest known name. A warning, not an error: the same
environment may hold another tool's variables.

`REAPER_` is reaper's alone: every unknown one is named. The other prefixes are shared (a
provider sets its own variables inside every instance, other tools of a channel read theirs),
so an unknown name with one of them is named only when it is close to a known one. The
providers' and channels' prefixes and variables come from their plugins.
"""

from __future__ import annotations

from collections.abc import Iterable

from reaper.channels.plugins import channel_plugins
from reaper.providers.plugins import plugins

OWN_PREFIX = "REAPER_"
# The prefixes of the core's own shared names; each provider's and channel's comes with its
# plugin (`env_prefix`).
CORE_PREFIXES = ("HEARTBEAT_", "BALANCE_", "IDLE_", "LOG_")

# The settings the core reads (`reaper.app.settings`), the contract's variables of every part of the
# product, the AWS deployment's and the on-instance kit's. The providers' and channels' own
# variables come from their plugins (`settings.variables`, and a provider's `kit.variables`)
# and are added by the caller.
CORE_VARIABLES = (
    "REAPER_MODE",
    "REAPER_STOPPED_TTL",
    "REAPER_WARN_BEFORE",
    "REAPER_MAX_TERMINATIONS",
    "REAPER_PROTECT",
    "REAPER_STATE",
    "REAPER_PING_KEY",
    "REAPER_ADMIN_KEY",
    "REAPER_MAX_MONITORS",
    "REAPER_REAP_EVERY",
    "REAPER_WATCH_EVERY",
    "REAPER_MAX_RUNTIME",
    "REAPER_REQUIRE_CHANNEL",
    "REAPER_STUCK_AFTER",
    "REAPER_VOLUME_ORPHAN_AFTER",
    "REAPER_PASS_DEADLINE",
    "REAPER_PUBLIC_URL",
    "REAPER_DIGEST_AT",
    "REAPER_ALLOW_UNKNOWN",
    "HEARTBEAT_TIMEOUT",
    "HEARTBEAT_REPEAT",
    "HEARTBEAT_REQUIRED",
    "HEARTBEAT_AUTO_CREATE",
    "BALANCE_MIN",
    "BALANCE_HOURS",
    "IDLE_ALERT_AFTER",
    "LOG_LEVEL",
    "LOG_FORMAT",
)
OTHER_VARIABLES = (
    # Troubleshooting and the AWS deployment (serverless.yml, its plugin, the Lambda runtime).
    "REAPER_DEBUG",
    "REAPER_SSM_PREFIX",
    "REAPER_HTTP_CONCURRENCY",
    "REAPER_BUILD_DIR",
    "REAPER_PYTHON",
    "REAPER_PYTHON312",
    # The on-instance kit (infra/instance/), when reaper runs beside it.
    "REAPER_SELF_KEY",
    "HEARTBEAT_URL",
    "HEARTBEAT_HOST",
    "IDLE_LIMIT",
    "IDLE_ACTION",
    "IDLE_IGNORE_PROCS",
    "IDLE_WATCH_LOCK",
    "IDLE_WATCH_LOOP",
    "IDLE_WATCH_MAX_LOOPS",
    "IDLE_WATCH_SLEEP",
    # The test suite's own (where the browser tests put their screenshots).
    "REAPER_ARTIFACTS",
)
# Below this similarity (difflib's ratio) a name is not a typo of a known one: no suggestion,
# and a shared-prefix name is somebody else's. A dropped or doubled letter scores above 0.9.
_CUTOFF = 0.8


def shared_prefixes() -> tuple[str, ...]:
    """The prefixes reaper shares with other tools: the core's, then each provider's and
    channel's, in registry order."""
    integrations = [p.env_prefix for p in plugins()] + [c.env_prefix for c in channel_plugins()]
    return (CORE_PREFIXES[0], *integrations, *CORE_PREFIXES[1:])


def nearest(name: str, known: Iterable[str], cutoff: float = _CUTOFF) -> str | None:
    """The known name closest to `name` (difflib's ratio), None below `cutoff`."""
    import difflib  # only when a name is unknown: most runs never need it

    matches = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=cutoff)
    return matches[0] if matches else None


def unknown_setting_warnings(
    names: Iterable[str], known: Iterable[str], *, source: dict[str, str] | None = None
) -> list[str]:
    """One line per unknown name with the product's prefixes, in name order. `source` maps a
    name to where it came from (".env"), added to its line."""
    known_set = set(known)
    lines = []
    for name in sorted(set(names)):
        upper = name.upper()
        if name in known_set or not upper.startswith((OWN_PREFIX, *shared_prefixes())):
            continue
        suggestion = nearest(upper, known_set)
        if suggestion is None and not upper.startswith(OWN_PREFIX):
            continue
        where = f" (in {source[name]})" if source and name in source else ""
        hint = f"; did you mean {suggestion}?" if suggestion else ""
        lines.append(f"warning: {name}{where} is not a setting reaper knows: ignored{hint}")
    return lines

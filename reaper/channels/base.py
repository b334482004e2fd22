"""The notifier interface every alert goes through, and how a channel plugs in.

The passes only know `Notifier.send`; which channels exist (those configured, or none — then
alerts are only logged) is decided once, from the settings. A channel is a module under
`reaper/channels/` whose `PLUGIN` says how to build it and whose `SETTINGS` reads its
variables; `registry.CHANNELS` names them, imported on first use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from reaper import log

if TYPE_CHECKING:  # pydantic models and asyncio: a cold ping imports neither
    from reaper.core.models import Alert, Delivery
    from reaper.settings.model import Settings
    from reaper.settings.parse import ChannelSettings, SettingsReader


def _real_sleep(seconds: float) -> Awaitable[None]:
    import asyncio

    return asyncio.sleep(seconds)


@dataclass(frozen=True)
class ChannelOptions:
    """How patient a channel is. Tests pass tiny values and a `sleep` that does not sleep."""

    # One HTTP request (connect, send, read), in seconds.
    timeout: float = 10.0
    # Attempts per message, the first one included.
    max_attempts: int = 4
    # Backoff before retry n is backoff_base * 2**(n-1) seconds (1, 2, 4 s by default).
    backoff_base: float = 1.0
    # A chat server's 429 asking to wait longer than this is reported as a failure instead: an alert
    # that arrives minutes late is worth less than a visible "rate limited" in the log.
    max_retry_after: float = 30.0
    # Everything one channel does for one alert (all parts, attempts and waits), in seconds.
    deadline: float = 45.0
    sleep: Callable[[float], Awaitable[None]] = field(default=_real_sleep, repr=False)


@dataclass(frozen=True)
class Verdict:
    """A channel's reading of one answer from its server."""

    kind: Literal["ok", "retry", "fail"]
    detail: str = ""
    # Seconds the server asked us to wait before retrying (a `retry_after` in its answer).
    retry_after: float | None = None


@dataclass(frozen=True)
class ChannelRequest:
    url: str
    body: dict[str, Any]
    # Extra request headers (an auth header); never logged.
    headers: dict[str, str] = field(default_factory=dict)


class Channel(Protocol):
    """One way to a phone: one per configured channel plugin."""

    @property
    def name(self) -> str: ...

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never appear in a detail or a log line (token, device key)."""
        ...

    def requests(self, alert: Alert) -> list[ChannelRequest]:
        """The requests that deliver `alert`, sent in order; all must succeed."""
        ...

    def classify(self, status: int, payload: Any) -> Verdict:
        """Read one HTTP answer; `payload` is the decoded JSON body, or None."""
        ...


@dataclass(frozen=True)
class ActionSlots:
    """How a channel offers an alert's actions (what the pass arms for it): `buttons` in-chat
    buttons answered by the bot itself; `links` per-action links to the action page; `menu`:
    one link to a page offering every action (a channel with a single tap)."""

    buttons: int = 0
    links: int = 0
    menu: bool = False


# Bytes of body one message carries whole on a channel that says nothing else.
BODY_BUDGET = 3000


@dataclass(frozen=True)
class Inbound:
    """How the phone answers through a channel whose buttons come back to reaper: by a webhook,
    `POST /<channel name>/<secret>` with the same secret in its `header` (both checked before
    anything is read; `secret(settings)` None: no webhook, and `reaper serve` long-polls
    instead). The code that answers acts through the passes, so the plugin names it by import
    path ("module:name") and only the interfaces import it: `webhook` the route's handler,
    `poller(settings, act_context)` the long poll (`run()`, `interrupt()`), `command` what
    `reaper <channel name>-webhook [--delete]` runs (`command(settings, delete=...)`, its help
    line `command_help`). `describe(settings, public_url)`: how presses arrive, for `reaper
    serve`'s start line (`settings` None: the channel is not configured)."""

    header: str
    secret: Callable[[ChannelSettings], str | None]
    webhook: str
    poller: str
    command: str
    command_help: str
    describe: Callable[[ChannelSettings | None, str | None], str]


@dataclass(frozen=True)
class ChannelPlugin:
    """What the rest of reaper may know of one channel: its name, how to build it from its
    settings (`build(settings) -> Channel`), how its variables are read (`settings`, all of
    them starting with `env_prefix`), and what one message carries; every list of the
    channels' facts elsewhere (the secrets read from SSM, the known variables and prefixes) is
    derived from these. `inbound`: how the phone answers through it, for a channel whose
    buttons come back to reaper (None: it only sends)."""

    name: str
    label: str
    build: Callable[[ChannelSettings], Channel]
    settings: SettingsReader
    env_prefix: str
    # Bytes of body one message can carry whole (what a folded list may fill).
    body_budget: int = BODY_BUDGET
    # How it offers actions from the phone; none by default.
    actions: ActionSlots = field(default_factory=ActionSlots)
    inbound: Inbound | None = None


class Notifier(Protocol):
    """Where a pass's alerts go, and what the channels behind it can carry: the most body one
    message may fill (a folded list of warnings) and how its actions can be offered (what the
    pass arms)."""

    async def send(self, alert: Alert) -> list[Delivery]:
        """Deliver to every configured channel; one failing never blocks another. Never raises."""
        ...

    @property
    def body_budget(self) -> int: ...

    @property
    def actions(self) -> ActionSlots: ...


class LogNotifier:
    """No channel configured: the alert is written to the log, so it is at least on record."""

    def __init__(self, *, body_budget: int = BODY_BUDGET, actions: ActionSlots | None = None):
        self.body_budget = body_budget
        self.actions = actions or ActionSlots()

    async def send(self, alert: Alert) -> list[Delivery]:
        log.event(
            "alert",
            result="logged",
            alert_event=alert.event,
            level=alert.level,
            title=alert.title,
            body=alert.body,
        )
        from reaper.core.models import Delivery

        return [Delivery(channel="log", ok=True)]


class SilentNotifier:
    """Sends nothing and says so: what a dry run alerts through (with the budget and actions of
    the channels it stands for, so that the dry run folds as the real pass would)."""

    def __init__(self, *, body_budget: int = BODY_BUDGET, actions: ActionSlots | None = None):
        self.body_budget = body_budget
        self.actions = actions or ActionSlots()

    async def send(self, alert: Alert) -> list[Delivery]:
        return []


def channels_configured(settings: Settings) -> list[str]:
    """Names of the configured channels, in delivery order; empty means alerts are only logged.
    Here rather than in `fanout`, so that a cold Lambda ping can ask without loading a channel."""
    return [c.channel for c in settings.channels]

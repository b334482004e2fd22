"""Wiring: the one place that builds what the passes run on — the store, the provider clients,
the notifier and the clock — once per entry point, and closes it once.

Each entry point (a command of the command line, `reaper serve`, a Lambda handler, the demo)
opens one `Runtime` here and hands it, or its parts, to the passes: no pass builds a client, a
notifier or a store of its own. A provider's clients are made per pass (`Runtime.clients`) and
closed by it, as a pass's own.

This module, the HTTP route table (`reaper.interfaces.http.ROUTES`) and the chat channels'
inbound side (`reaper.interfaces.inbound`) are reaper's dynamic seams, where a module is
imported by a name held in a string or only when it is first needed, so that a cold start pays
for what it runs and no more: a provider's client module (its plugin's `client`, with the HTTP
client and the pydantic models behind it) is imported when the first client is made — a Lambda
container answering pings never loads one —, a provider's emulator (`reaper demo`, `reaper
emulate`) only when one is started, and the passes when an entry point first runs one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from importlib import import_module
from typing import TYPE_CHECKING, Any

from reaper import log
from reaper.channels.base import ChannelOptions, LogNotifier, Notifier, SilentNotifier
from reaper.channels.plugins import action_slots, body_budget, channel_plugin
from reaper.clock import Clock, SystemClock
from reaper.providers.base import HttpOptions, ProviderClient, ProviderPlugin
from reaper.providers.plugins import plugin
from reaper.settings.model import Settings
from reaper.store import open_store
from reaper.store.ports import Store

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from reaper.channels.base import Channel
    from reaper.core.digest import Digest
    from reaper.passes.act import ActContext
    from reaper.passes.deadline import PassDeadline
    from reaper.passes.reap import ConfirmOptions, ReapReport
    from reaper.passes.watch import WatchReport
    from reaper.settings.parse import Account, ProviderSettings

# The provider calls of a "terminate now" from the phone are request-sized: short time-outs,
# one retry (whoever pressed waits for the answer, and a Lambda request has 10 s).
ACT_HTTP = HttpOptions(
    timeout=4.0, max_attempts=2, backoff_base=0.25, backoff_cap=1.0, retry_after_cap=2.0
)


def make_clients(settings: Settings, options: HttpOptions | None = None) -> list[ProviderClient]:
    """One client per configured account, in registry order. Callers `aclose()` them."""
    options = options or HttpOptions()
    clients: list[ProviderClient] = []
    for configured in settings.providers:
        module, _, function = plugin(configured.provider).client.partition(":")
        make: Callable[[Account, ProviderSettings, HttpOptions], ProviderClient] = getattr(
            import_module(module), function
        )
        clients += [make(account, configured, options) for account in configured.accounts]
    return clients


def emulator(provider: ProviderPlugin) -> Any:
    """The class of a provider's emulator (its plugin's `emulator`, `module:Class`), from the
    separate `emulators` distribution: ImportError when it is not installed."""
    module, _, name = provider.emulator.partition(":")
    return getattr(import_module(module), name)


def build_channels(settings: Settings) -> list[Channel]:
    """One channel per configured channel plugin, each built by its own module."""
    return [
        channel_plugin(configured.channel).build(configured) for configured in settings.channels
    ]


def make_notifier(settings: Settings, *, options: ChannelOptions | None = None) -> Notifier:
    """The notifier for these settings: every configured channel, or the log when none is."""
    from reaper.channels.fanout import FanoutNotifier

    channels = build_channels(settings)
    names = [c.channel for c in settings.channels]
    budget, actions = body_budget(names), action_slots(names)
    if not channels:
        return LogNotifier(body_budget=budget, actions=actions)
    log.register_secrets([s for c in channels for s in c.secrets])
    unheard = frozenset(c.channel for c in settings.channels if not c.reaches_person)
    return FanoutNotifier(channels, options, unheard, body_budget=budget, actions=actions)


def silent_notifier(settings: Settings) -> Notifier:
    """What a dry run alerts through: nothing sent, folded as the configured channels fold."""
    names = [c.channel for c in settings.channels]
    return SilentNotifier(body_budget=body_budget(names), actions=action_slots(names))


@asynccontextmanager
async def own_clients(
    settings: Settings, options: HttpOptions | None = None
) -> AsyncIterator[list[ProviderClient]]:
    """Clients of every configured account for one piece of work, closed whatever happens."""
    import asyncio

    made = make_clients(settings, options)
    try:
        yield made
    finally:
        await asyncio.gather(*(c.aclose() for c in made), return_exceptions=True)


async def looked_up_room(settings: Settings, store: Store, clock: Clock, host: str) -> int:
    """`passes.ping.lookup_room` with clients that live for that one read: a ping the monitor
    cap refused, for a provider host the listings do not show, at most once per host an hour.
    One quick try: the instance's watchdog waits for the answer (its own timeout is 5 s)."""
    from reaper.passes.ping import lookup_room

    quick = HttpOptions(timeout=3.0, deadline=4.0, max_attempts=1)
    async with own_clients(settings, quick) as clients:
        return await lookup_room(store, clock, clients, host)


class Runtime:
    """What one entry point runs on. The notifier is built when first asked for (most commands
    never alert); `http`: the provider clients' options (None: the defaults)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        notifier: Notifier | None = None,
        clock: Clock | None = None,
        http: HttpOptions | None = None,
        channel_options: ChannelOptions | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock: Clock = clock or SystemClock()
        self.http = http
        self._notifier = notifier
        self._channel_options = channel_options

    @property
    def notifier(self) -> Notifier:
        if self._notifier is None:
            self._notifier = make_notifier(self.settings, options=self._channel_options)
        return self._notifier

    def make_clients(self, options: HttpOptions | None = None) -> list[ProviderClient]:
        return make_clients(self.settings, options or self.http)

    @asynccontextmanager
    async def clients(
        self, options: HttpOptions | None = None
    ) -> AsyncIterator[list[ProviderClient]]:
        """A pass's own clients, closed whatever happens."""
        async with own_clients(self.settings, options or self.http) as made:
            yield made

    def close(self) -> None:
        self.store.close()


def open_state(settings: Settings, *, read_only: bool = False, existing: bool = False) -> Store:
    """The store REAPER_STATE names (`reaper.store.open_store`)."""
    return open_store(settings.state, read_only=read_only, existing=existing)


@contextmanager
def opened(
    settings: Settings,
    *,
    read_only: bool = False,
    existing: bool = False,
    notifier: Notifier | None = None,
    clock: Clock | None = None,
    http: HttpOptions | None = None,
    channel_options: ChannelOptions | None = None,
) -> Iterator[Runtime]:
    """A `Runtime` for one command's work, its store opened first (a bad REAPER_STATE fails
    before anything else is built) and closed when the work is done (or failed)."""
    store = open_state(settings, read_only=read_only, existing=existing)
    runtime = Runtime(
        settings,
        store,
        notifier=notifier,
        clock=clock,
        http=http,
        channel_options=channel_options,
    )
    try:
        yield runtime
    finally:
        runtime.close()


# --- the passes, as the entry points run them ---------------------------------------------


async def run_pass(
    runtime: Runtime,
    *,
    dry_run: bool = False,
    max_terminations: int | None = None,
    deadline: PassDeadline | None = None,
) -> ReapReport:
    """One pass as the CLI, `serve` and Lambda run it: clients made for it (and closed whatever
    happens), the runtime's notifier (a dry run alerts no one). `deadline`: the pass's time
    (Lambda: no later than the invocation's remaining time allows)."""
    from reaper.passes.reap import reap_pass

    notifier = silent_notifier(runtime.settings) if dry_run else runtime.notifier
    async with runtime.clients() as clients:
        return await reap_pass(
            runtime.settings,
            runtime.store,
            clients,
            notifier,
            runtime.clock,
            dry_run=dry_run,
            max_terminations=max_terminations,
            deadline=deadline,
        )


async def reap_once(runtime: Runtime) -> int:
    """A scheduled pass (`serve`). Never raises for an expected outcome: the exit code says
    what happened."""
    report = await run_pass(runtime)
    return report.exit_code


async def watch_once(runtime: Runtime) -> WatchReport:
    """One watch pass with clients of its own (the command line, Lambda)."""
    from reaper.passes.watch import watch_pass

    async with runtime.clients() as clients:
        return await watch_pass(
            runtime.settings, runtime.store, runtime.notifier, runtime.clock, clients
        )


async def collect_report(runtime: Runtime, now: datetime) -> Digest:
    """The providers live and the store as of `now` (`reaper report`), with clients of its own."""
    from reaper.passes.digest import collect

    async with runtime.clients() as clients:
        return await collect(runtime.settings, runtime.store, clients, now)


async def digest_once(runtime: Runtime) -> int:
    """The daily digest with clients of its own (Lambda)."""
    from reaper.passes.digest import digest_once as send_digest

    async with runtime.clients() as clients:
        return await send_digest(
            runtime.settings, runtime.store, runtime.notifier, runtime.clock, clients=clients
        )


def act_context(
    settings: Settings,
    store: Store,
    notifier: Notifier,
    clock: Clock,
    *,
    http: HttpOptions | None = None,
    confirm: ConfirmOptions | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> ActContext:
    """What carrying out an action from the phone needs: a "terminate now" gets clients of its
    own, request-sized (`http`, by default ACT_HTTP)."""
    import asyncio

    from reaper.passes.act import ACT_CONFIRM, ActContext

    return ActContext(
        settings,
        store,
        notifier,
        clock,
        clients=lambda: make_clients(settings, http or ACT_HTTP),
        confirm=confirm or ACT_CONFIRM,
        sleep=sleep or asyncio.sleep,
    )

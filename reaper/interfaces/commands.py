"""The commands of the command line: each runs a pass or reads the store, and prints a view.

`cli` parses the arguments and hands over to one of these; exit statuses follow the contract:
0 done, 1 needs attention, 2 bad configuration or arguments (a `ConfigError`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime, timedelta

from reaper import log
from reaper.app import wiring
from reaper.app.settings import channel_readers
from reaper.channels.base import ChannelOptions, channels_configured
from reaper.clock import Clock, SystemClock
from reaper.core.messages import test_message
from reaper.core.models import Instance, instance_key
from reaper.core.units import utc
from reaper.interfaces import views
from reaper.interfaces.nearest import nearest
from reaper.interfaces.table import terminal_width
from reaper.interfaces.web.session import LOGIN_LINK_LIFETIME, create_login_link, login_link_base
from reaper.passes import keeping
from reaper.providers.base import HttpOptions
from reaper.providers.plugins import parse_target
from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError
from reaper.store.ports import Store

EXIT_OK = 0
EXIT_ATTENTION = 1
EXIT_CONFIG = 2


def reap_command(
    settings: Settings,
    *,
    dry_run: bool,
    json_output: bool,
    max_terminations: int | None,
    show_all: bool = False,
) -> int:
    settings.require_provider_keys()
    with wiring.opened(settings, read_only=dry_run) as runtime:
        report = asyncio.run(
            wiring.run_pass(runtime, dry_run=dry_run, max_terminations=max_terminations)
        )
    if report.lease_taken:
        print(f"reaper: {report.lease_note}; nothing done", file=sys.stderr)
    if report.clock_behind:
        print(f"reaper: {report.clock_problem}; nothing decided", file=sys.stderr)
    if json_output:
        print(json.dumps(views.reap_json(report), ensure_ascii=False))
    elif not report.lease_taken:
        print(views.reap_table(report, show_all=show_all, width=terminal_width()))
    return report.exit_code


def _listed(store: Store, provider: str) -> tuple[list[Instance], datetime | None]:
    """The instances the last complete listing of each account of `provider` showed, and when
    the newest of those listings was taken (None: the provider was never listed)."""
    found: list[Instance] = []
    newest: datetime | None = None
    for listing in store.listings():
        if listing.provider == provider:
            newest = listing.at if newest is None else max(newest, listing.at)
            found += listing.instances
    return found, newest


def _not_listed(key: str, listed: list[Instance], listed_at: datetime | None) -> ConfigError:
    """Why `reaper keep` refuses an id the listing does not show, with the nearest ids listed:
    a mistyped id would otherwise be a stored keep that spares nothing (and the instance meant
    goes on to its deadline)."""
    provider, _, instance_id = key.partition(":")
    if listed_at is None:
        return ConfigError(
            "<provider>:<id>",
            f"no reap pass has listed {provider} yet, so {key} cannot be checked: run"
            " `reaper reap` first, or keep it anyway with --force",
        )
    near = nearest(instance_id, (i.id for i in listed))
    named = ", ".join(f"{provider}:{i}" for i in near) or "none: it listed no instance"
    return ConfigError(
        "<provider>:<id>",
        f"{key} is not in the last listing of {provider} ({utc(listed_at)}); nearest listed:"
        f" {named}. Check the id, or keep it anyway with --force",
    )


def keep_command(
    settings: Settings, *, target: str, duration: timedelta | None, force: bool = False
) -> int:
    """`reaper keep`: `duration` None keeps until `reaper unkeep` (`--for forever`). An id the
    last complete listing of its provider does not show is refused (exit 2, nothing stored),
    unless `force`."""
    provider, instance_id = parse_target(target)
    now = SystemClock().now()
    key = instance_key(provider, instance_id)
    until = now + duration if duration else None
    with wiring.opened(settings) as runtime:
        store = runtime.store
        listed, listed_at = _listed(store, provider)
        seen = next((i for i in listed if i.key == key), None)
        if seen is None and not force:
            raise _not_listed(key, listed, listed_at)
        gone = keeping.terminated_among(store, [key]).get(key)
        if gone is not None and not force:
            # The last listing still shows it, but the reaper terminated it since: a keep of it
            # would spare nothing (the phone's and the page's keeps refuse it the same way).
            how = "confirmed gone" if gone.confirmed else "listed as terminated"
            raise ConfigError(
                "<provider>:<id>",
                f"{key} was already terminated at {utc(gone.at)} ({how}); nothing to keep",
            )
        keeping.keep(
            store, key, now=now, until=until, by=keeping.command_line_user(), via="command line"
        )
    log.event("keep", provider=provider, id=instance_id, until=until, result="kept")
    name = f" ({seen.name})" if seen is not None and seen.name else ""
    print(f"kept {key}{name} " + (f"until {utc(until)}" if until else "until `reaper unkeep`"))
    if seen is None:
        print(
            f"reaper: note: {key} is not in the last listing (kept with --force)", file=sys.stderr
        )
    return 0


def unkeep_command(settings: Settings, *, target: str) -> int:
    provider, instance_id = parse_target(target)
    key = instance_key(provider, instance_id)
    with wiring.opened(settings) as runtime:
        ended = keeping.unkeep(
            runtime.store,
            key,
            now=SystemClock().now(),
            by=keeping.command_line_user(),
            via="command line",
        ).done
    log.event("unkeep", provider=provider, id=instance_id, result="ended" if ended else "none")
    if ended:
        print(f"no longer kept: {key} (the reaper treats it as any other instance again)")
        return 0
    print(f"reaper: {key} was not kept; nothing changed", file=sys.stderr)
    return 0


def audit_command(settings: Settings, *, json_output: bool) -> int:
    with wiring.opened(settings, read_only=True, existing=True) as runtime:
        records = runtime.store.audit_log()
        actions = runtime.store.action_log()
    if json_output:
        print(json.dumps(views.audit_json(records, actions), ensure_ascii=False))
    else:
        print(views.audit_table(records, actions, width=terminal_width()))
    return EXIT_OK


def status_command(settings: Settings, json_output: bool) -> int:
    """`reaper status`: monitors, the stopped fleet and the last reap, as the store knows them."""
    with wiring.opened(settings, read_only=True, existing=True) as runtime:
        data = views.status_report(settings, runtime.store, runtime.clock.now())
    if json_output:
        print(json.dumps(data, ensure_ascii=False))
    else:
        print("\n".join(views.status_lines(data, width=terminal_width())))
    return EXIT_OK


def watch_command(settings: Settings, json_output: bool) -> int:
    """`reaper watch`: one watch pass, for cron or a Lambda schedule."""
    with wiring.opened(settings) as runtime:
        report = asyncio.run(wiring.watch_once(runtime))
    if json_output:
        print(json.dumps(views.watch_json(report), ensure_ascii=False))
    else:
        print("\n".join(views.watch_lines(report)))
    return report.exit_code


def report_command(
    settings: Settings,
    *,
    json_output: bool,
    clock: Clock | None = None,
    http_options: HttpOptions | None = None,
) -> int:
    """`reaper report [--json]`: providers live, the store read-only. 0 done; 1 when a
    listing failed (its spend and leaks are unknown); no keys at all is a config error."""
    settings.require_provider_keys()
    now = (clock or SystemClock()).now()
    with wiring.opened(settings, read_only=True, existing=True, http=http_options) as runtime:
        digest = asyncio.run(wiring.collect_report(runtime, now))
    if json_output:
        print(json.dumps(views.digest_json(digest), ensure_ascii=False))
    else:
        print(views.digest_text(digest, width=terminal_width()))
    for problem in digest.errors:
        print(f"reaper: {problem.provider}/{problem.account}: {problem.message}", file=sys.stderr)
    return 1 if digest.errors else 0


def test_alert_command(settings: Settings, *, options: ChannelOptions | None = None) -> int:
    """`reaper test-alert`: one message through every configured channel, one line each.

    Exit 0 when every channel delivered, 1 when any failed, 2 when none is configured (that is
    a configuration problem, stated the way config errors are).
    """
    if not channels_configured(settings):
        variables = " / ".join(reader.variables[0] for reader in channel_readers())
        print(f"reaper: {variables}: no alert channel configured", file=sys.stderr)
        return EXIT_CONFIG
    notifier = wiring.make_notifier(settings, options=options)
    deliveries = asyncio.run(notifier.send(test_message()))
    for delivery in deliveries:
        print(
            f"{delivery.channel}: ok"
            if delivery.ok
            else f"{delivery.channel}: failed: {delivery.detail}"
        )
    return EXIT_OK if all(d.ok for d in deliveries) else EXIT_ATTENTION


def login_link_command(settings: Settings, *, clock: Clock | None = None) -> int:
    """`reaper login-link`: print a one-time link (15 minutes, single use) that signs a
    browser in to the status page: for the phone, where typing the admin key is no fun."""
    login_link_base(settings)  # the settings first: nothing is opened for a config error
    with wiring.opened(settings, clock=clock) as runtime:
        link = create_login_link(settings, runtime.store, runtime.clock.now())
    log.event("login_link", result="created")
    print(link)
    print(
        f"reaper: the link signs one browser in; it works once, for "
        f"{int(LOGIN_LINK_LIFETIME.total_seconds() // 60)} minutes",
        file=sys.stderr,
    )
    return EXIT_OK

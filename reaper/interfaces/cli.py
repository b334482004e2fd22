"""`reaper ...`: the command line.

This module only parses arguments, loads the settings and hands over to one function per
command; exit statuses follow the contract: 0 done, 1 needs attention, 2 bad config. A config
error is one line on stderr naming the variable (also under `--json`), never a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from reaper import __version__, log
from reaper.app.settings import load_settings
from reaper.interfaces.inbound import run_webhook_command, webhook_commands
from reaper.providers.plugins import plugins
from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError, parse_duration
from reaper.store.failure import store_failure

EXIT_OK = 0
EXIT_ATTENTION = 1
EXIT_CONFIG = 2
# 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit 2, like every other bad input; and a
    value that starts with a minus and a digit ("-1d") is a value, which its own parser judges
    ("a duration must be positive"), not an option argparse cannot find ("expected one
    argument": argparse itself knows only plain negative numbers)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(EXIT_CONFIG)


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0-65535, got {text!r}")
    return value


def _positive(text: str) -> None:
    """A negative duration, said as such (not as "expected a duration like 30m")."""
    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"a duration must be positive, got {text!r}")


def _duration(text: str) -> object:
    _positive(text)
    try:
        return parse_duration(text, "--for")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.expected) from None


# `reaper keep host:<host>`: a monitor's keep, which its instance reads back from its pings.
HOST_TARGET = "host:"

# `reaper keep` without `--for`: a week, not for ever — a keep forgotten must end by itself.
KEEP_DEFAULT = timedelta(days=7)


def _keep_for(text: str) -> object:
    """`--for` of `reaper keep`: a duration, or `forever` (None: until `reaper unkeep`)."""
    return None if text.strip().lower() == "forever" else _duration(text)


def build_parser() -> argparse.ArgumentParser:
    """Every command and flag, each with its help line (tests/test_cli_help.py walks them)."""
    parser = _Parser(prog="reaper", description="The guard outside rented GPU instances.")
    parser.add_argument(
        "--version", action="version", version=f"reaper {__version__}", help="print the version"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar="<command>"
    )

    reap = commands.add_parser("reap", help="one reap pass")
    reap.add_argument("--dry-run", action="store_true", help="decide and report; change nothing")
    reap.add_argument("--json", action="store_true", help="print one JSON object")
    reap.add_argument(
        "--max-terminations",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="terminate at most N in this run (overrides REAPER_MAX_TERMINATIONS; 0 = none)",
    )
    reap.add_argument(
        "--all",
        dest="show_all",
        action="store_true",
        help="list running instances with nothing to do too (folded away by default)",
    )

    watch = commands.add_parser("watch", help="one heartbeat check")
    watch.add_argument("--json", action="store_true", help="print one JSON object")

    serve = commands.add_parser("serve", help="HTTP API + schedules, SQLite state")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8080, help="port to listen on (8080)")

    status = commands.add_parser("status", help="fleet and monitors as the state knows them")
    status.add_argument("--json", action="store_true", help="print one JSON object")

    target_help = "the instance, as " + " or ".join(
        f"{provider.name}:<{provider.id_noun}>" for provider in plugins()
    )
    target_help += ", or host:<host> (what that monitor's instance reads back from its pings)"
    keep = commands.add_parser("keep", help="spare one instance without renaming it")
    keep.add_argument("target", metavar="<provider>:<id>", help=target_help)
    keep.add_argument(
        "--for",
        dest="duration",
        type=_keep_for,
        default=KEEP_DEFAULT,
        metavar="3d",
        help="keep it this long (30m, 24h, 3d, 2w; default 7d), or `forever` (until unkept)",
    )
    keep.add_argument(
        "--force",
        action="store_true",
        help="keep an id the last listing does not show (refused otherwise: a typo?)",
    )

    unkeep = commands.add_parser("unkeep", help="end a keep")
    unkeep.add_argument("target", metavar="<provider>:<id>", help=target_help)

    audit = commands.add_parser("audit", help="every termination: what, why, when, confirmed")
    audit.add_argument("--json", action="store_true", help="print one JSON object")

    report = commands.add_parser("report", help="spend, leaks, balances, what was reaped")
    report.add_argument("--json", action="store_true", help="print one JSON object")

    commands.add_parser("test-alert", help="one message through every configured channel")

    for name, help_line in webhook_commands().items():
        webhook = commands.add_parser(name, help=help_line)
        webhook.add_argument(
            "--delete", action="store_true", help="stop the webhook: `serve` long-polls again"
        )
    demo = commands.add_parser("demo", help="the whole loop against built-in emulated providers")
    demo.add_argument(
        "--serve",
        action="store_true",
        help="then keep the demo's status page and its emulated phone up until Ctrl-C",
    )

    _emulate_parser(commands)
    commands.add_parser(
        "login-link", help="a one-time sign-in link to the status page (for the phone)"
    )
    commands.add_parser(
        "init", help="print a .env skeleton with freshly generated keys (writes nothing)"
    )
    _monitor_parser(commands)
    _idle_parser(commands)
    return parser


def _idle_after(text: str) -> object:
    """`--after` of `reaper idle`: whole minutes, as the instance reads them back."""
    from reaper.core.monitors import BadSetting, idle_after_text

    _positive(text)
    try:
        return idle_after_text(parse_duration(text, "--after"))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.expected) from None
    except BadSetting as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--after: ")) from None


def _idle_parser(commands: Any) -> None:
    idle = commands.add_parser(
        "idle", help="what that instance's idle-watch reads back from its pings"
    )
    idle.add_argument(
        "host", help="the monitor's host, as the instance pings (<provider>-<id>, ...)"
    )
    limit = idle.add_mutually_exclusive_group(required=True)
    limit.add_argument(
        "--after", type=_idle_after, metavar="30m", help="destroy after this long idle (minutes)"
    )
    limit.add_argument("--never", action="store_true", help="never destroy it for idleness")
    limit.add_argument(
        "--default", action="store_true", help="back to the instance's own IDLE_LIMIT"
    )


def _run_idle(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.monitor_commands import monitor_idle

    after = "never" if args.never else "" if args.default else str(args.after)
    return monitor_idle(settings, args.host, after=after)


# --- reaper emulate ----------------------------------------------------------------------------


def _named_port(text: str) -> tuple[str, int]:
    """`--port <provider>=<port>`."""
    names = [provider.name for provider in plugins()]
    name, sep, port = text.partition("=")
    if not sep or name not in names:
        expected = " or ".join(f"{n}=<port>" for n in names)
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return name, _port(port)


def _emulate_parser(commands: Any) -> None:
    labels = " and ".join(provider.label for provider in plugins())
    emulate = commands.add_parser(
        "emulate",
        help=f"run the {labels} emulators on loopback until Ctrl-C",
        description=(
            f"Start emulated {labels} APIs on 127.0.0.1 with a fleet from a JSON file,"
            " print the export lines that point reaper at them, and run until Ctrl-C."
        ),
    )
    emulate.add_argument(
        "--fleet",
        metavar="FILE",
        default=None,
        help="the fleet, a JSON file (docs/demo.md); default: the demo's fleet",
    )
    emulate.add_argument(
        "--port",
        dest="ports",
        type=_named_port,
        action="append",
        default=[],
        metavar="PROVIDER=PORT",
        help="a provider's emulator's port, e.g. "
        + f"{plugins()[0].name}=8001"
        + " (again for each provider; default: any free one)",
    )
    for provider in plugins():
        emulate.add_argument(
            f"--{provider.name}-port",
            dest=f"port_{provider.name}",
            type=_port,
            default=None,
            metavar="PORT",
            help=f"{provider.label}'s port (default: any free one); the same as --port"
            f" {provider.name}=PORT",
        )


def _emulate_ports(args: argparse.Namespace) -> dict[str, int]:
    """The ports asked for, by provider: `--<provider>-port` first, `--port` over it."""
    ports = {
        provider.name: getattr(args, f"port_{provider.name}")
        for provider in plugins()
        if getattr(args, f"port_{provider.name}") is not None
    }
    return ports | dict(args.ports)


# --- reaper monitor ... ----------------------------------------------------------------------


def _monitor_setting(name: str) -> Callable[[str], object]:
    """`--timeout`/`--grace`: a duration (grace also 0), or `default` to reset it."""

    def parse(text: str) -> object:
        from reaper.core.monitors import BadSetting, duration_setting

        try:
            value = duration_setting(text, name)
        except BadSetting as exc:
            raise argparse.ArgumentTypeError(str(exc).partition(": ")[2]) from None
        return "default" if value is None else value

    return parse


def _mute_for(text: str) -> object:
    from reaper.core.monitors import LONGEST

    value = _duration(text)
    if not isinstance(value, timedelta) or value > LONGEST:
        raise argparse.ArgumentTypeError("expected at most 365d")
    return value


def _monitor_parser(commands: Any) -> None:
    monitor = commands.add_parser("monitor", help="monitors, one by one")
    actions = monitor.add_subparsers(dest="action", required=True, parser_class=_Parser)
    host_help = "the monitor's host, as its pings name it"
    json_help = "print one JSON object"
    listing = actions.add_parser("list", help="every monitor with its own settings")
    listing.add_argument("--json", action="store_true", help=json_help)
    log_ = actions.add_parser("log", help="a monitor's last 100 events")
    log_.add_argument("host", help=host_help)
    log_.add_argument("--json", action="store_true", help=json_help)
    for name, text in (
        ("pause", "never alert until resumed (a ping resumes it too)"),
        ("resume", "watch it again; silence counts from now"),
        ("unmute", "alert again at once"),
        ("delete", "remove the monitor and its ping log"),
    ):
        actions.add_parser(name, help=text).add_argument("host", help=host_help)
    mute = actions.add_parser("mute", help="no alert until the time (its state is tracked)")
    mute.add_argument("host", help=host_help)
    mute.add_argument(
        "--for",
        dest="duration",
        type=_mute_for,
        default=timedelta(days=1),
        help="how long, e.g. 2h or 3d (default 1d, at most 365d)",
    )
    set_ = actions.add_parser("set", help="its own timeout and grace (creates it if missing)")
    set_.add_argument("host", help=host_help)
    set_.add_argument(
        "--timeout",
        type=_monitor_setting("timeout"),
        metavar="10m",
        help="silence before it counts as late (1m-365d, or default: HEARTBEAT_TIMEOUT)",
    )
    set_.add_argument(
        "--grace",
        type=_monitor_setting("grace"),
        metavar="2m",
        help="more silence after the timeout before it is down (0-365d, or default: none)",
    )


def _run_monitor(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces import monitor_commands as mc

    action = args.action
    if action == "list":
        return mc.monitor_list(settings, json_output=args.json)
    if action == "log":
        return mc.monitor_log(settings, args.host, json_output=args.json)
    if action in ("pause", "resume"):
        return mc.monitor_pause(settings, args.host, paused=action == "pause")
    if action in ("mute", "unmute"):
        duration = args.duration if action == "mute" else None
        return mc.monitor_mute(settings, args.host, duration=duration)
    if action == "delete":
        return mc.monitor_delete(settings, args.host)
    return mc.monitor_set(settings, args.host, timeout=args.timeout, grace=args.grace)


def _run_reap(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import reap_command

    return reap_command(
        settings,
        dry_run=args.dry_run,
        json_output=args.json,
        max_terminations=args.max_terminations,
        show_all=args.show_all,
    )


def _run_watch(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import watch_command

    return watch_command(settings, json_output=args.json)


def _run_serve(args: argparse.Namespace, settings: Settings) -> int:
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError(
            "reaper serve",
            "needs the serve extra, which is not installed: pip install 'reaper[serve]'",
        ) from None
    from reaper.interfaces.serve import serve_command

    return serve_command(settings, host=args.host, port=args.port)


def _run_status(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import status_command

    return status_command(settings, json_output=args.json)


def _run_keep(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import keep_command

    if args.target.startswith(HOST_TARGET):
        from reaper.interfaces.monitor_commands import monitor_keep

        host = args.target.removeprefix(HOST_TARGET)
        return monitor_keep(settings, host, duration=args.duration)
    return keep_command(settings, target=args.target, duration=args.duration, force=args.force)


def _run_unkeep(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import unkeep_command

    if args.target.startswith(HOST_TARGET):
        from reaper.interfaces.monitor_commands import monitor_unkeep

        return monitor_unkeep(settings, args.target.removeprefix(HOST_TARGET))
    return unkeep_command(settings, target=args.target)


def _run_audit(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import audit_command

    return audit_command(settings, json_output=args.json)


def _run_report(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import report_command

    return report_command(settings, json_output=args.json)


def _run_test_alert(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import test_alert_command

    return test_alert_command(settings)


def _run_webhook(args: argparse.Namespace, settings: Settings) -> int:
    return run_webhook_command(args.command, settings, delete=args.delete)


def _run_demo(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.demo import demo_command

    return demo_command(serve=args.serve)


def _run_emulate(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.emulate import emulate_command

    return emulate_command(fleet=args.fleet, ports=_emulate_ports(args))


def _run_login_link(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import login_link_command

    return login_link_command(settings)


def _run_init(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.init import init_command

    return init_command(settings)


_COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "reap": _run_reap,
    "watch": _run_watch,
    "serve": _run_serve,
    "status": _run_status,
    "keep": _run_keep,
    "idle": _run_idle,
    "unkeep": _run_unkeep,
    "audit": _run_audit,
    "report": _run_report,
    "test-alert": _run_test_alert,
    "demo": _run_demo,
    "emulate": _run_emulate,
    "login-link": _run_login_link,
    "monitor": _run_monitor,
    "init": _run_init,
    **{name: _run_webhook for name in webhook_commands()},
}
# Commands that build their own configuration and read none from the environment.
_NO_SETTINGS = ("demo", "emulate", "init")
# Commands that refuse an unknown REAPER_* name in enforce mode (`load_settings(strict=True)`).
_STRICT = ("reap", "serve")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Ctrl-C at any moment — parsing, loading the settings, the command — is
    one line and exit 130 (the entry point in `reaper.__main__` covers the imports before)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("reaper: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        # The demo and the emulators need no configuration: they build their own. The
        # commands that act refuse an unknown REAPER_* name in enforce mode (a typo's default
        # would apply silently); the others warn.
        settings = (
            Settings()
            if args.command in _NO_SETTINGS
            else load_settings(strict=args.command in _STRICT)
        )
    except ConfigError as exc:
        print(f"reaper: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    log.register_secrets(settings.secrets())
    log.apply_settings(settings.log_level, settings.log_format)
    try:
        return _COMMANDS[args.command](args, settings)
    except ConfigError as exc:
        print(f"reaper: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except Exception as exc:
        return _unexpected(exc)


_DYNAMODB_CONFIG_ERRORS = ("NoCredentialsError", "NoRegionError", "ResourceNotFoundException")


def _dynamodb_problem(kind: str, text: str) -> str:
    """What a DynamoDB failure means for the person running the command, in one line."""
    if kind == "NoCredentialsError":
        return (
            "dynamodb:// needs AWS credentials, and none were found: set AWS_PROFILE, or"
            " AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    if kind == "ResourceNotFoundException":
        return (
            "the DynamoDB table does not exist in this account and region (check the table"
            f" name, AWS_REGION or ?region=): {text}"
        )
    return f"DynamoDB failed: {kind}: {text}"


def _unexpected(exc: Exception) -> int:
    """Never a traceback for the user: one line, no secret in it. A store that cannot be
    written (a full or read-only disk) or reached (DynamoDB without credentials or network)
    names REAPER_STATE; anything else is a bug, and REAPER_DEBUG=1 shows its traceback."""
    if os.environ.get("REAPER_DEBUG") == "1":
        raise exc
    text = log.redact(" ".join(str(exc).split()))[:200]
    kind = type(exc).__name__
    failure = store_failure(exc)
    if failure is not None and failure.backend != "dynamodb":
        line = f"REAPER_STATE: {failure.cause}: {failure.advice} ({failure.detail})"
        print(f"reaper: {line}", file=sys.stderr)
        return EXIT_ATTENTION
    if type(exc).__module__.startswith(("botocore", "boto3")):
        print(f"reaper: REAPER_STATE: {_dynamodb_problem(kind, text)}", file=sys.stderr)
        # No credentials, no region or no such table is configuration; a network or service
        # failure is not.
        return EXIT_CONFIG if kind in _DYNAMODB_CONFIG_ERRORS else EXIT_ATTENTION
    print(
        f"reaper: unexpected error: {kind}: {text} (REAPER_DEBUG=1 shows where)",
        file=sys.stderr,
    )
    return EXIT_ATTENTION


if __name__ == "__main__":
    raise SystemExit(main())

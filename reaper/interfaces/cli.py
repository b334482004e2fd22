"""`reaper ...`: the command line.

This module only parses arguments, loads the settings and hands over to one function per
command; exit statuses follow the contract: 0 done, 1 needs attention, 2 bad config. A config
error is one line on stderr naming the variable (also under `--json`), never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from reaper import log
from reaper.config import ConfigError, Settings, load_settings, parse_duration

EXIT_OK = 0
EXIT_ATTENTION = 1
EXIT_CONFIG = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit 2, like every other bad input."""

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


def _duration(text: str) -> object:
    try:
        return parse_duration(text, "--for")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.expected) from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="reaper", description="The guard outside rented GPU instances.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    reap = commands.add_parser("reap", help="one reap pass")
    reap.add_argument("--dry-run", action="store_true", help="decide and report; change nothing")
    reap.add_argument("--json", action="store_true", help="print one JSON object")
    reap.add_argument("--max-terminations", type=_non_negative_int, default=None, metavar="N")

    watch = commands.add_parser("watch", help="one heartbeat check")
    watch.add_argument("--json", action="store_true")

    serve = commands.add_parser("serve", help="HTTP API + schedules, SQLite state")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8080)

    status = commands.add_parser("status", help="fleet and monitors as the state knows them")
    status.add_argument("--json", action="store_true")

    keep = commands.add_parser("keep", help="spare one instance without renaming it")
    keep.add_argument("target", metavar="<provider>:<id>")
    keep.add_argument("--for", dest="duration", type=_duration, default=None, metavar="3d")

    unkeep = commands.add_parser("unkeep", help="end a keep")
    unkeep.add_argument("target", metavar="<provider>:<id>")

    audit = commands.add_parser("audit", help="every termination: what, why, when, confirmed")
    audit.add_argument("--json", action="store_true")

    report = commands.add_parser("report", help="spend, leaks, balances, what was reaped")
    report.add_argument("--json", action="store_true")

    commands.add_parser("test-alert", help="one message through every configured channel")
    commands.add_parser("demo", help="the whole loop against built-in emulated providers")
    _monitor_parser(commands)
    return parser


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
    listing = actions.add_parser("list", help="every monitor with its own settings")
    listing.add_argument("--json", action="store_true")
    log_ = actions.add_parser("log", help="a monitor's last 100 events")
    log_.add_argument("host")
    log_.add_argument("--json", action="store_true")
    for name, text in (
        ("pause", "never alert until resumed (a ping resumes it too)"),
        ("resume", "watch it again; silence counts from now"),
        ("unmute", "alert again at once"),
        ("delete", "remove the monitor and its ping log"),
    ):
        actions.add_parser(name, help=text).add_argument("host")
    mute = actions.add_parser("mute", help="no alert until the time (its state is tracked)")
    mute.add_argument("host")
    mute.add_argument("--for", dest="duration", type=_mute_for, default=timedelta(days=1))
    set_ = actions.add_parser("set", help="its own timeout and grace (creates it if missing)")
    set_.add_argument("host")
    set_.add_argument("--timeout", type=_monitor_setting("timeout"), metavar="10m")
    set_.add_argument("--grace", type=_monitor_setting("grace"), metavar="2m")


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

    return keep_command(settings, target=args.target, duration=args.duration)


def _run_unkeep(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.commands import unkeep_command

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


def _run_demo(args: argparse.Namespace, settings: Settings) -> int:
    from reaper.interfaces.demo import demo_command

    return demo_command()


_COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "reap": _run_reap,
    "watch": _run_watch,
    "serve": _run_serve,
    "status": _run_status,
    "keep": _run_keep,
    "unkeep": _run_unkeep,
    "audit": _run_audit,
    "report": _run_report,
    "test-alert": _run_test_alert,
    "demo": _run_demo,
    "monitor": _run_monitor,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        # The demo needs no configuration: it builds its own against the emulators.
        settings = Settings() if args.command == "demo" else load_settings()
    except ConfigError as exc:
        print(f"reaper: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    log.register_secrets(settings.secrets())
    try:
        return _COMMANDS[args.command](args, settings)
    except ConfigError as exc:
        print(f"reaper: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print("reaper: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        return _unexpected(exc)


def _unexpected(exc: Exception) -> int:
    """Never a traceback for the user: one line, no secret in it. A store that cannot be
    reached (DynamoDB without credentials or network) names REAPER_STATE; anything else is a
    bug, and REAPER_DEBUG=1 shows its traceback."""
    if os.environ.get("REAPER_DEBUG") == "1":
        raise exc
    text = log.redact(" ".join(str(exc).split()))[:200]
    kind = type(exc).__name__
    if type(exc).__module__.startswith(("botocore", "boto3")):
        print(f"reaper: REAPER_STATE: DynamoDB failed: {kind}: {text}", file=sys.stderr)
        # No credentials or no region is configuration; a network or service failure is not.
        return EXIT_CONFIG if kind in ("NoCredentialsError", "NoRegionError") else EXIT_ATTENTION
    print(
        f"reaper: unexpected error: {kind}: {text} (REAPER_DEBUG=1 shows where)",
        file=sys.stderr,
    )
    return EXIT_ATTENTION


if __name__ == "__main__":
    raise SystemExit(main())

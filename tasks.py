"""`invoke` tasks: shortcuts over the same code paths as the `reaper` command."""

from __future__ import annotations

import sys
from pathlib import Path

from invoke import task
from invoke.context import Context


@task(help={"dry_run": "decide and report; change nothing", "json": "print one JSON object"})
def reap(c: Context, dry_run: bool = False, json: bool = False) -> None:
    """One reap pass: the same as `reaper reap [--dry-run] [--json]`."""
    from reaper.interfaces.cli import main

    args = ["reap"] + (["--dry-run"] if dry_run else []) + (["--json"] if json else [])
    code = main(args)
    if code:
        sys.exit(code)


@task(help={"stage": "serverless stage (default: prod)"})
def deploy(c: Context, stage: str = "prod") -> None:
    """Deploy to AWS with the project's own Serverless Framework CLI (osls, from the committed
    npm lock file), never a global `serverless` that may be another major version."""
    binary = "node_modules/.bin/serverless"
    if not Path(binary).exists():
        c.run("npm ci --no-audit --no-fund", pty=False)
    c.run(f"{binary} deploy --stage {stage}", pty=False, env={"REAPER_PYTHON": sys.executable})


@task(help={"delete": "stop the webhook, so that `reaper serve` long-polls again"})
def telegram_webhook(c: Context, delete: bool = False) -> None:
    """Register the Telegram webhook for button presses: the same as `reaper telegram-webhook`
    (`<REAPER_PUBLIC_URL>/telegram/<TELEGRAM_WEBHOOK_SECRET>`, the secret as secret_token)."""
    from reaper.interfaces.cli import main

    code = main(["telegram-webhook"] + (["--delete"] if delete else []))
    if code:
        sys.exit(code)

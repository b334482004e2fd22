"""`invoke` tasks: shortcuts over the same code paths as the `reaper` command.

They run in this repository wherever `invoke -r <repo>` is called from (its `.env`, its
`node_modules`), with the repository's own `.venv` when there is one, so that an `invoke`
installed elsewhere (pipx, the system) works as well as the one in `.venv`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from invoke import task
from invoke.context import Context

ROOT = Path(__file__).resolve().parent


def _python() -> str:
    """The repository's virtualenv, else the interpreter running invoke."""
    local = ROOT / ".venv" / "bin" / "python"
    return str(local) if local.exists() else sys.executable


@task(
    help={
        "dry_run": "decide and report; change nothing",
        "json": "print one JSON object",
        "max_terminations": "terminate at most N in this run (overrides REAPER_MAX_TERMINATIONS)",
    }
)
def reap(c: Context, dry_run: bool = False, json: bool = False, max_terminations: str = "") -> None:
    """One reap pass: the same as `reaper reap [--dry-run] [--json] [--max-terminations N]`."""
    args = ["reap"] + (["--dry-run"] if dry_run else []) + (["--json"] if json else [])
    if max_terminations != "":
        args += ["--max-terminations", max_terminations]
    command = " ".join(shlex.quote(a) for a in [_python(), "-m", "reaper", *args])
    with c.cd(str(ROOT)):
        # No stdin: nothing here reads it (and a captured one, as under pytest, breaks it).
        result = c.run(command, pty=False, warn=True, hide=False, in_stream=False)
    if result is not None and result.exited:
        sys.exit(result.exited)


@task(help={"stage": "serverless stage (default: prod)"})
def deploy(c: Context, stage: str = "prod") -> None:
    """Deploy to AWS with the project's own Serverless Framework CLI (osls, from the committed
    npm lock file), never a global `serverless` that may be another major version."""
    binary = ROOT / "node_modules" / ".bin" / "serverless"
    with c.cd(str(ROOT)):
        if not binary.exists():
            c.run("npm ci --no-audit --no-fund", pty=False)
        c.run(
            f"{shlex.quote(str(binary))} deploy --stage {shlex.quote(stage)}",
            pty=False,
            env={"REAPER_PYTHON": _python()},
        )


@task(help={"delete": "stop the webhook, so that `reaper serve` long-polls again"})
def telegram_webhook(c: Context, delete: bool = False) -> None:
    """Register the Telegram webhook for button presses: the same as `reaper telegram-webhook`
    (`<REAPER_PUBLIC_URL>/telegram/<TELEGRAM_WEBHOOK_SECRET>`, the secret as secret_token)."""
    args = ["telegram-webhook"] + (["--delete"] if delete else [])
    command = " ".join(shlex.quote(a) for a in [_python(), "-m", "reaper", *args])
    with c.cd(str(ROOT)):
        # No stdin: nothing here reads it (and a captured one, as under pytest, breaks it).
        result = c.run(command, pty=False, warn=True, hide=False, in_stream=False)
    if result is not None and result.exited:
        sys.exit(result.exited)

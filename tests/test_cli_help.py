"""`reaper --version`, and a help line for every command and every flag: the command line
explains itself."""

from __future__ import annotations

import argparse
import subprocess
import sys

from reaper import __version__
from reaper.interfaces.cli import build_parser


def _walk(parser: argparse.ArgumentParser, path: str = "reaper"):  # type: ignore[no-untyped-def]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", helps.get(name)
                yield from _walk(sub, f"{path} {name}")
        else:
            yield f"{path} {'/'.join(action.option_strings) or action.dest}", action.help


def test_every_command_and_flag_has_a_help_line() -> None:
    entries = list(_walk(build_parser()))
    assert len(entries) > 30, "the walk found too little: it is broken"
    missing = [name for name, text in entries if not text or text == argparse.SUPPRESS]
    assert missing == []
    assert ("reaper reap --max-terminations", True) in [(n, bool(t)) for n, t in entries]
    assert any(name == "reaper emulate --fleet" for name, _ in entries)


def test_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reaper", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"reaper {__version__}"


def test_a_command_help_shows_its_flags_lines() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reaper", "reap", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert "REAPER_MAX_TERMINATIONS" in " ".join(done.stdout.split())
    assert "--all" in done.stdout

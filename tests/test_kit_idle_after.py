"""`reaper idle <host> --after 30m | --never | --default`, as idle-watch reads it back from
its pings: `idle_after` replaces IDLE_LIMIT until it changes, `never` turns the idle destroy
off, null is the kit's own IDLE_LIMIT. A limit lowered under the idle time already counted
warns first and waits a whole warning period."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.guard import Guard
from tests.kit_fakes.harness import Kit

HOST = "runpod-pod-1"


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.on_pod(tmp_path, IDLE_LIMIT="3") as k:
        yield k


def minutes(kit: Kit) -> list[str]:
    return [" ".join(line.split()[:2]) for line in kit.status_lines()]


def set_idle(value: str | None) -> Callable[[Guard], None]:
    def run(guard: Guard) -> None:
        guard.idle_after[HOST] = value

    return run


@pytest.mark.parametrize("after", ["9m", "540s", "9M"])
def test_idle_after_replaces_idle_limit(kit: Kit, after: str) -> None:
    kit.guard.idle_after[HOST] = after

    done = kit.watch(loops=20)

    assert done.returncode == 0
    # the first status line is sent before the first answer is read
    assert minutes(kit) == ["idle 1/3"] + [f"idle {n}/9" for n in range(2, 9)] + ["destroying 9/9"]
    assert kit.status_lines()[1].endswith(" limit=reaper")
    assert kit.titles()[0] == f"{HOST}: idle 4 min, destroying in 5 min"
    assert "reaper idle: destroy after 9 idle min instead of IDLE_LIMIT" in done.stderr


@pytest.mark.parametrize(
    ("after", "limit"), [("1h", 60), ("1h30m", 90), ("2d", 2880), ("1w", 10080)]
)
def test_hours_days_and_weeks_are_read_as_reaper_writes_them(
    kit: Kit, after: str, limit: int
) -> None:
    kit.guard.idle_after[HOST] = after

    kit.watch(loops=3)

    assert minutes(kit) == ["idle 1/3", f"idle 2/{limit}", f"idle 3/{limit}"]
    assert kit.deletes() == []


def test_never_turns_the_idle_destroy_off(kit: Kit) -> None:
    kit.guard.idle_after[HOST] = "never"

    done = kit.watch(loops=12)

    assert done.returncode == 0
    assert minutes(kit)[1:] == [f"idle {n}/never" for n in range(2, 13)]
    assert kit.deletes() == []
    assert kit.notifies() == []  # not even a warning
    assert "reaper idle: never destroy this instance for idleness" in done.stderr


def test_never_then_default_warns_and_waits_a_whole_warning_period(kit: Kit) -> None:
    """Idle for 6 minutes under `never`; then `--default` (3 min): no destroy on the spot."""
    kit.guard.idle_after[HOST] = "never"
    kit.guard.before_ping[6] = set_idle(None)

    done = kit.watch(loops=20)

    assert minutes(kit)[5:] == ["idle 6/never"] + [f"idle {n}/3" for n in range(7, 11)] + [
        "destroying 11/3"
    ]
    assert kit.titles()[0] == f"{HOST}: idle 6 min, destroying in 5 min"
    assert "back to IDLE_LIMIT (3 min)" in done.stderr
    assert len(kit.deletes()) == 1


def test_a_lower_limit_after_the_warning_warns_again(kit: Kit) -> None:
    """Warned under a 9-minute limit at minute 4; `--after 5m` at minute 6: the destroy waits
    five minutes from the new warning, not from the old one."""
    kit.guard.idle_after[HOST] = "9m"
    kit.guard.before_ping[6] = set_idle("5m")

    kit.watch(loops=20)

    assert kit.titles() == [
        f"{HOST}: idle 4 min, destroying in 5 min",
        f"{HOST}: idle 6 min, destroying in 5 min",
        f"{HOST}: idle 11 min, destroying",
    ]
    assert minutes(kit)[-1] == "destroying 11/5"


def test_a_higher_limit_after_the_warning_puts_the_destroy_off(kit: Kit) -> None:
    kit.guard.before_ping[2] = set_idle("30m")

    kit.watch(loops=10)

    assert kit.titles() == [f"{HOST}: idle 1 min, destroying in 2 min"]
    assert minutes(kit)[-1] == "idle 10/30"
    assert kit.deletes() == []

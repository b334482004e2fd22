"""The two-way heartbeat: idle-watch pings with `Accept: application/json` and obeys a keep
set from outside (`reaper keep`, the status page, a phone's Keep). While `keep_until` is in
the future — by the answer's own Date, not this instance's clock — it does not destroy for
idleness, and says so once; when the keep ends it warns again and waits a whole warning
period; a press reaches it at its next ping.

The guard's clock moves one minute per check (`Guard.step`), as the kit counts its checks."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.kit_fakes.guard import Guard
from tests.kit_fakes.harness import Kit
from tests.kit_fakes.recorder import Response
from tests.kit_fakes.s3 import s3_store

HOST = "runpod-pod-1"


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    with Kit.on_pod(tmp_path, IDLE_LIMIT="7") as k:
        yield k


def minutes(kit: Kit) -> list[str]:
    return [" ".join(line.split()[:2]) for line in kit.status_lines()]


def keep_at(n: int, minutes: int) -> dict[int, Callable[[Guard], None]]:
    """A Keep pressed just before check `n`, for `minutes` from then."""

    def press(guard: Guard) -> None:
        guard.keeps[HOST] = guard.at(n) + timedelta(minutes=minutes)

    return {n: press}


def test_every_check_asks_for_json(kit: Kit) -> None:
    kit.watch(loops=2)

    plain = kit.http.matching("POST", rf"/ping/.*/{HOST}")
    assert [r.headers.get("accept") for r in plain] == ["application/json"] * 2


def test_a_keep_pressed_after_the_warning_spares_the_instance(kit: Kit) -> None:
    kit.guard.before_ping.update(keep_at(5, minutes=60))

    done = kit.watch(loops=12)

    assert done.returncode == 0
    assert kit.deletes() == []
    # a status line says what the kit knew when it pinged: the keep shows from check 6
    assert minutes(kit) == [f"idle {n}/7" for n in range(1, 6)] + [
        f"kept {n}/7" for n in range(6, 13)
    ]
    until = kit.guard.at(5) + timedelta(minutes=60)
    warning, kept = kit.notifies()
    assert warning.kind == "idle_soon"
    assert (
        kept.title == f"{HOST}: kept until {until:%Y-%m-%d %H:%M} UTC, no idle destroy before then"
    )
    assert kept.level == "info"
    assert done.stderr.count("notify (info): kept until") == 1  # said once, not every check
    assert kit.status_lines()[-1].endswith(f"kept={until:%Y-%m-%dT%H:%M:%SZ}")


def test_a_keep_seen_at_the_check_that_would_destroy_stops_the_destroy(kit: Kit) -> None:
    """The delay from a press to the instance seeing it is one ping: the answer of the very
    ping of the destroying check is obeyed."""
    kit.guard.before_ping.update(keep_at(7, minutes=60))

    kit.watch(loops=8)

    assert minutes(kit)[6] == "destroying 7/7"  # what it knew when it pinged
    assert minutes(kit)[7] == "kept 8/7"
    assert kit.deletes() == []
    assert "ping:bye" not in kit.events()
    assert not any(t.endswith(", destroying") for t in kit.titles())


def test_a_keep_pressed_while_the_results_upload_stops_the_destroy(
    kit: Kit, tmp_path: Path
) -> None:
    """The save at the limit outlasts a ping period (a slow store): one more ping reads the
    answer before the destroy, and the Keep pressed meanwhile is obeyed."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "metrics.json").write_text("{}")
    then = time.time() - 120
    os.utime(results / "metrics.json", (then, then))
    with s3_store() as store:
        store.proxy.slow(0.4)
        kit.guard.before_ping.update(keep_at(2, minutes=60))  # the ping after the save

        done = kit.watch(
            loops=3,
            IDLE_LIMIT="1",
            IDLE_WATCH_SLEEP="0.5",
            RESULTS_DIR=str(results),
            timeout=60,
            **store.env(),
        )

        assert len(store.objects()) == 2  # the results were saved all the same
    assert done.returncode == 0, done.stderr
    assert kit.deletes() == []
    assert "ping:bye" not in kit.events()
    assert "not destroying after all" in done.stderr
    assert [t.split(": ", 1)[1].split(" until")[0] for t in kit.titles()] == [
        "idle 1 min, destroying now",
        "kept",
    ]


def test_when_the_keep_ends_it_warns_again_and_waits_a_whole_warning_period(kit: Kit) -> None:
    kit.guard.before_ping.update(keep_at(3, minutes=5))

    done = kit.watch(loops=30)

    assert done.returncode == 0
    assert minutes(kit) == (
        ["idle 1/7", "idle 2/7", "idle 3/7"]
        + [f"kept {n}/7" for n in range(4, 8)]
        + [f"idle {n}/7" for n in range(8, 13)]
        + ["destroying 13/7"]
    )
    first, kept, again, destroying = kit.notifies()
    assert first.title == f"{HOST}: idle 2 min, destroying in 5 min"
    assert kept.title.startswith(f"{HOST}: kept until ")
    assert again.title == f"{HOST}: idle 8 min, destroying in 5 min"
    assert again.kind == "idle_soon"
    assert again.body.startswith("The keep until ")
    assert again.destroy_at == (kit.guard.at(8) + timedelta(minutes=5)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert destroying.title == f"{HOST}: idle 13 min, destroying"
    assert len(kit.deletes()) == 1


@pytest.mark.parametrize("offset_hours", [-5, 5])
def test_the_keep_is_judged_by_the_answers_date_not_this_instances_clock(
    kit: Kit, offset_hours: int
) -> None:
    """The guard's clock is hours off this instance's (a third-party host keeps its own):
    behind, its keep_until lies in this instance's past; ahead, far in its future. Either
    way the keep lasts exactly its 3 minutes."""
    kit.guard.start = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=offset_hours)
    kit.guard.before_ping.update(keep_at(1, minutes=3))

    kit.watch(loops=30)

    assert minutes(kit)[:5] == ["idle 1/7", "kept 2/7", "kept 3/7", "idle 4/7", "idle 5/7"]
    assert minutes(kit)[-1] == "destroying 9/7"  # warned at 4, a whole warning period
    assert len(kit.deletes()) == 1


def test_a_keep_for_ever_is_a_far_future_time(kit: Kit) -> None:
    kit.guard.keeps[HOST] = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)

    done = kit.watch(loops=12, IDLE_LIMIT="2")

    assert done.returncode == 0
    assert minutes(kit) == ["idle 1/2"] + [f"kept {n}/2" for n in range(2, 13)]
    assert kit.titles() == [f"{HOST}: kept with no end set, no idle destroy"]
    assert kit.deletes() == []


def test_a_keep_ended_from_outside_warns_before_any_destroy(kit: Kit) -> None:
    """`reaper unkeep`: the answer says null while the keep had hours to go."""
    kit.guard.keeps[HOST] = kit.guard.at(1) + timedelta(hours=5)

    def unkeep(guard: Guard) -> None:
        guard.keeps[HOST] = None

    kit.guard.before_ping[10] = unkeep

    kit.watch(loops=30)

    assert minutes(kit)[8:11] == ["kept 9/7", "kept 10/7", "idle 11/7"]
    assert minutes(kit)[-1] == "destroying 15/7"
    assert kit.titles()[-2] == f"{HOST}: idle 10 min, destroying in 5 min"


def test_a_longer_keep_is_said_again_the_same_keep_is_not(kit: Kit) -> None:
    kit.guard.before_ping.update(keep_at(1, minutes=4))

    def longer(guard: Guard) -> None:
        guard.keeps[HOST] = guard.at(3) + timedelta(hours=1)

    kit.guard.before_ping[3] = longer

    kit.watch(loops=6)

    kept = [t for t in kit.titles() if ": kept until " in t]
    assert len(kept) == 2
    assert kit.deletes() == []


# -- answers it cannot read -----------------------------------------------------------------


def _good(n: int, guard: Guard) -> Response | None:
    """Check 1 reads a keep of 3 minutes and an idle limit of 9 minutes."""
    if n == 1:
        return guard.json(
            {"ok": True, "keep_until": _iso(guard.at(1) + timedelta(minutes=3)), "idle_after": "9m"}
        )
    return None


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


UNREADABLE: dict[str, Callable[[Guard], Response]] = {
    "plain OK of an older reaper": lambda g: Response(200, "OK"),
    "404": lambda g: Response(404, "Not Found"),
    "503": lambda g: Response(503, '{"ok": false}', "application/json"),
    "HTML": lambda g: Response(200, "<html>bad gateway</html>", "text/html"),
    "broken JSON": lambda g: Response(200, '{"ok": true, "keep_until": nu', "application/json"),
    "a list": lambda g: g.json([1, 2]),
    "ok false": lambda g: g.json({"ok": False, "keep_until": None, "idle_after": None}),
    "keep_until a number": lambda g: g.json({"ok": True, "keep_until": 5, "idle_after": None}),
    "keep_until not a time": lambda g: g.json(
        {"ok": True, "keep_until": "tomorrow", "idle_after": None}
    ),
    "idle_after a number": lambda g: g.json({"ok": True, "keep_until": None, "idle_after": 90}),
    "idle_after no unit": lambda g: g.json({"ok": True, "keep_until": None, "idle_after": "90"}),
    "idle_after zero": lambda g: g.json({"ok": True, "keep_until": None, "idle_after": "0m"}),
    "a field missing": lambda g: g.json({"ok": True, "keep_until": None}),
    "no Date": lambda g: g.json({"ok": True, "keep_until": None, "idle_after": None}, date=""),
    "a Date it cannot read": lambda g: g.json(
        {"ok": True, "keep_until": None, "idle_after": None}, date="yesterday"
    ),
}


@pytest.mark.parametrize("kind", UNREADABLE)
def test_an_answer_it_cannot_read_changes_nothing(kit: Kit, kind: str) -> None:
    """After one good reading (kept 3 min, idle limit 9), every answer is unreadable: the
    limit stays 9 and the keep is not stretched past its end."""
    bad = UNREADABLE[kind]
    kit.guard.override = lambda n, g: _good(n, g) or bad(g)

    done = kit.watch(loops=30)

    assert done.returncode == 0, done.stderr
    assert minutes(kit) == (
        ["idle 1/7", "kept 2/9", "kept 3/9"]
        + [f"idle {n}/9" for n in range(4, 9)]
        + ["destroying 9/9"]
    )
    assert done.stderr.count("cannot read the heartbeat's answer") == 1  # said once
    assert len(kit.deletes()) == 1


def test_an_answer_that_does_not_come_in_time_changes_nothing(kit: Kit) -> None:
    """A good reading at check 1 (kept 1 min, idle limit 4), then pings that time out: the
    limit stays 4, the keep ends at check 2, which warns, and the destroy waits a whole
    warning period."""

    def answer(n: int, guard: Guard) -> Response | None:
        if n == 1:
            until = _iso(guard.at(1) + timedelta(minutes=1))
            return guard.json({"ok": True, "keep_until": until, "idle_after": "4m"})
        time.sleep(4)  # past the kit's KIT_HTTP_TIMEOUT of 2 s
        return guard.answer(HOST)

    kit.guard.override = answer

    done = kit.run("idle-watch.sh", IDLE_WATCH_MAX_LOOPS="30", KIT_HTTP_TIMEOUT="2", timeout=60)

    assert minutes(kit) == ["idle 1/7"] + [f"idle {n}/4" for n in range(2, 7)] + ["destroying 7/4"]
    assert kit.titles()[1] == f"{HOST}: idle 2 min, destroying in 5 min"
    assert "cannot read the heartbeat's answer (HTTP 000)" in done.stderr
    assert len(kit.deletes()) == 1


def test_without_python3_an_answer_is_unreadable_not_a_crash(kit: Kit, tmp_path: Path) -> None:
    kit.guard.keeps[HOST] = kit.guard.at(1) + timedelta(hours=1)
    tools = tools_without_python(tmp_path, kit)

    done = kit.watch(loops=10, PATH=str(tools), IDLE_LIMIT="3")

    assert done.returncode == 0, done.stderr
    assert minutes(kit) == ["idle 1/3", "idle 2/3", "destroying 3/3"]
    assert "python3 is not on this instance (it reads the JSON)" in done.stderr
    assert len(kit.deletes()) == 1


def tools_without_python(tmp_path: Path, kit: Kit) -> Path:
    """A PATH with what the kit needs and no python at all."""
    import shutil

    tools = tmp_path / "tools"
    tools.mkdir()
    needed = "bash dirname date curl mktemp head rm find tr timeout flock sleep touch"
    for tool in needed.split():
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    for fake in ("nvidia-smi", "who", "pgrep", "hostname", "_section.sh"):
        (tools / fake).symlink_to(kit.bin / fake)
    return tools


@pytest.mark.parametrize(
    "before",
    ["", "HTTP/1.1 200 Connection established\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\n"],
    ids=["direct", "through a proxy", "after 100 Continue"],
)
def test_the_answer_is_the_header_block_the_body_follows(kit: Kit, before: str) -> None:
    """curl -i shows a proxy's CONNECT answer, or a 100 Continue, before the real one."""
    raw = (
        f"{before}HTTP/2 200\r\ndate: Wed, 02 Dec 2026 21:00:00 GMT\r\n"
        'content-type: application/json\r\n\r\n{"ok": true, "keep_until": '
        '"2026-12-02T21:32:00Z", "idle_after": "90m"}'
    )
    snippet = (
        'kit_split_answer "$RAW"; '
        'kit_read_answer "$KIT_ANSWER_CODE" "$KIT_ANSWER_DATE" "$KIT_ANSWER_BODY"; '
        'echo "$KIT_ANSWER|$KIT_KEEP_MS|$KIT_IDLE_AFTER|$KIT_KEEP_TEXT"'
    )

    done = kit.source(snippet, RAW=raw)

    assert done.stdout.strip() == "ok|1920000|5400000|until 2026-12-02 21:32 UTC"


@pytest.mark.parametrize(
    ("date", "server_ms"),
    [
        ("Wed, 02 Dec 2026 21:00:00 GMT", "1796245200000"),  # IMF-fixdate, what reaper sends
        ("Wednesday, 02-Dec-26 21:00:00 GMT", "1796245200000"),  # RFC 850
        ("Wed Dec  2 21:00:00 2026", "1796245200000"),  # asctime
        ("Wed, 02 Dec 2026 22:00:00 +0100", "1796245200000"),  # a zone other than GMT
        ("Mon, 31 Feb 2026 21:00:00 GMT", None),  # no such day
        ("Wed, 02 Dec 2026 24:00:00 GMT", None),  # no such hour
    ],
)
def test_every_form_of_date_http_allows_is_read(kit: Kit, date: str, server_ms: str | None) -> None:
    """The keep is counted from the answer's Date: read in any of HTTP's three forms (the
    common one at once, the others through the standard library), a date that does not
    exist is no Date."""
    body = '{"ok": true, "keep_until": "2026-12-02T21:32:00Z", "idle_after": null}'
    snippet = (
        'kit_read_answer 200 "$DATE" "$BODY"; '
        'echo "$KIT_ANSWER|$KIT_SERVER_MS|$KIT_KEEP_MS|$KIT_ANSWER_WHY"'
    )

    done = kit.source(snippet, DATE=date, BODY=body)

    if server_ms is None:
        assert done.stdout.strip() == "unreadable|||no readable Date header"
    else:
        assert done.stdout.strip() == f"ok|{server_ms}|1920000|"


def test_an_answer_the_same_as_the_last_is_not_read_again(kit: Kit, tmp_path: Path) -> None:
    """idle-watch pings every minute and the answer changes only when a keep or a limit is
    set: the same body is read once, and each answer's own Date still counts the keep."""
    runs = tmp_path / "python-runs"
    counting = kit.bin / "python3-counting"
    counting.write_text(f'#!/bin/sh\necho run >>"{runs}"\nexec "{kit.bin}/python3.real" "$@"\n')
    counting.chmod(0o755)
    (kit.bin / "python3").rename(kit.bin / "python3.real")
    counting.rename(kit.bin / "python3")
    keep = '{"ok": true, "keep_until": "2026-12-02T21:32:00.500Z", "idle_after": "90m"}'
    other = '{"ok": true, "keep_until": null, "idle_after": "90m"}'
    snippet = (
        'for answer in "21:00:00|$KEEP" "21:30:00|$KEEP" "21:31:00|$OTHER" "21:31:30|$KEEP"; do '
        'kit_read_answer 200 "Wed, 02 Dec 2026 ${answer%%|*} GMT" "${answer#*|}"; '
        'echo "$KIT_KEEP_MS|$KIT_IDLE_AFTER|$KIT_KEEP_TEXT"; done'
    )

    done = kit.source(snippet, KEEP=keep, OTHER=other)

    assert done.stdout.splitlines() == [
        "1920500|5400000|until 2026-12-02 21:32 UTC",
        "120500|5400000|until 2026-12-02 21:32 UTC",
        "|5400000|",
        "30500|5400000|until 2026-12-02 21:32 UTC",
    ]
    assert runs.read_text().count("run") == 3  # the second answer was not read again

"""Whole answers as the providers were seen giving them, not only the objects in them: every
answer of `tests/corpus/answers/` (each file names its source) is served by the emulator for
its call, read by the client over loopback and then by whole reap passes, and must read as its
file says: an error for that account only, with a one-line reason naming the cause; "gone"
(which confirms a destroy); or that instance."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from emulators import RunPodEmulator, VastEmulator
from emulators.server import Response
from reaper.core.models import Instance
from reaper.providers.base import ProviderError
from tests.provider_support import on_runpod, on_vast
from tests.reap_support import RUNPOD_KEY, VAST_KEY, World, action_of, events, world

ANSWERS = sorted((Path(__file__).parent / "corpus" / "answers").glob("*/*.json"))
# After every timestamp in the corpus.
AFTER_THE_CORPUS = datetime(2026, 12, 15, 12, 0, tzinfo=UTC)
# The instance every "show" answer is asked about: the one of `show-one-element-list`.
SHOWN_ID = "31507724"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def response_of(answer: dict[str, Any]) -> Response:
    body = answer["body"]
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return Response(answer["status"], raw, answer.get("content_type", "application/json"))


def shown_instance() -> dict[str, Any]:
    data = load(
        Path(__file__).parent / "corpus" / "answers" / "vast" / "show-one-element-list.json"
    )
    obj: dict[str, Any] = data["answer"]["body"]["instances"][0]
    return obj


def read(call: str) -> Callable[[Any], Awaitable[Any]]:
    """What the client does with the answer to `call`."""
    if call == "list":
        return lambda client: client.list_instances()
    if call == "show":
        return lambda client: client.lookup(SHOWN_ID)
    return lambda client: client.balance()


def assert_says(message: str, expect: dict[str, Any]) -> None:
    """One line, naming every word the file expects and none it rules out, never a trace."""
    assert "\n" not in message and "Traceback" not in message, message
    for words in expect.get("says", []):
        assert words in message, (words, message)
    for words in expect.get("never_says", []):
        assert words not in message, (words, message)


def test_the_answer_corpus_is_there_and_names_its_sources() -> None:
    calls = {(p.parent.name, load(p)["call"]) for p in ANSWERS}
    assert calls == {
        ("vast", "show"),
        ("vast", "list"),
        ("runpod", "list"),
        ("runpod", "balance"),
    }
    for path in ANSWERS:
        data = load(path)
        assert set(data) >= {"source", "what", "call", "answer", "expect"}, path.name
        assert data["source"].strip() and data["what"].strip()
        assert data["expect"]["reading"] in ("error", "gone", "instance")


@pytest.mark.parametrize("path", ANSWERS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_client_reads_each_answer_as_its_file_says(path: Path) -> None:
    data = load(path)
    provider, call, expect = path.parent.name, data["call"], data["expect"]
    emulator_type = RunPodEmulator if provider == "runpod" else VastEmulator
    key = RUNPOD_KEY if provider == "runpod" else VAST_KEY
    on = on_runpod if provider == "runpod" else on_vast
    with emulator_type({"main": key}) as server:
        server.answer_as(call, response_of(data["answer"]))
        if expect["reading"] == "gone":
            assert on(server, key, read(call)) is None
            return
        if expect["reading"] == "instance":
            got = on(server, key, read(call))
            assert isinstance(got, Instance) and got.id == SHOWN_ID
            assert got.state == expect["state"]
            return
        with pytest.raises(ProviderError) as caught:
            on(server, key, read(call))
    assert caught.value.account == "main"
    assert_says(caught.value.message, expect)
    assert key not in caught.value.message


LISTINGS = [p for p in ANSWERS if load(p)["call"] == "list"]
BALANCES = [p for p in ANSWERS if load(p)["call"] == "balance"]
SHOWS = [p for p in ANSWERS if load(p)["call"] == "show"]


def serve_one_stopped_each(w: World) -> tuple[str, str]:
    """A stopped pod and a stopped Vast instance (the one the show answers are about)."""
    pod = w.runpod.add_pod(status="EXITED", name="stopped-pod")
    instance = str(w.vast.add_instance_json(shown_instance()))
    return pod, instance


@pytest.mark.parametrize("path", LISTINGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_listing_answer_fails_its_account_alone_once_and_recovers(
    tmp_path: Path, path: Path
) -> None:
    data = load(path)
    provider, expect = path.parent.name, data["expect"]
    with world(tmp_path, start=AFTER_THE_CORPUS) as w:
        pod, instance = serve_one_stopped_each(w)
        emulator = w.runpod if provider == "runpod" else w.vast
        emulator.answer_as("list", response_of(data["answer"]), account="main")
        for _ in range(2):
            report = w.run()
            [error] = report.errors
            assert (error.provider, error.account) == (provider, "main")
            assert_says(error.message, expect)
            assert report.exit_code == 1
            # The other provider goes on: its stopped instance is listed and decided.
            other = instance if provider == "runpod" else pod
            assert [i.id for i in report.instances] == [other]
        # Alerted once for the episode, not at every pass.
        assert events(w.notifier).count("provider_failing") == 1
        emulator.answer_as("list", None, account="main")
        report = w.run()
        assert report.errors == [] and report.exit_code == 0
        assert {i.id for i in report.instances} == {pod, instance}
        assert emulator.mutations == []


@pytest.mark.parametrize("path", BALANCES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_balance_answer_is_one_warning_never_a_failed_pass(tmp_path: Path, path: Path) -> None:
    data = load(path)
    with world(tmp_path, start=AFTER_THE_CORPUS) as w:
        serve_one_stopped_each(w)
        w.runpod.answer_as("balance", response_of(data["answer"]))
        for _ in range(3):
            report = w.run()
            assert report.errors == [] and report.exit_code == 0
            assert report.guards is not None
            [warning] = report.guards.warnings
            assert warning.provider == "runpod"
            assert_says(warning.message, data["expect"])
            # Every other guard goes on: Vast's balance is read.
            assert [b.provider for b in report.guards.balances] == ["vast"]
        [alert] = [a for a in w.notifier.alerts if a.event == "guard_fetch_failed"]
        assert all(words in alert.body for words in data["expect"]["says"])


@pytest.mark.parametrize("path", SHOWS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_only_instance_is_confirmed_gone_only_by_a_gone_answer(
    tmp_path: Path, path: Path
) -> None:
    """An account with one instance: once destroyed, the re-list is empty, which proves
    nothing; the instance's own endpoint must say it is gone."""
    data = load(path)
    gone = data["expect"]["reading"] == "gone"
    with world(tmp_path, start=AFTER_THE_CORPUS) as w:
        instance = str(w.vast.add_instance_json(shown_instance()))
        w.reach_deadline()
        w.vast.answer_as("show", response_of(data["answer"]))
        report = w.run()
        assert action_of(report, instance) == "terminate"
        [action] = report.actions
        assert action.done and action.confirmed is gone
        assert report.exit_code == (0 if gone else 1)
        assert ("termination_unconfirmed" in events(w.notifier)) is not gone
        assert ("terminated" in events(w.notifier)) is gone


GONE = [p for p in SHOWS if load(p)["expect"]["reading"] == "gone"]


@pytest.mark.parametrize("path", GONE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_fresh_read_that_answers_gone_deletes_nothing(tmp_path: Path, path: Path) -> None:
    """Right before a delete, an instance its own endpoint shows gone is not there: nothing is
    deleted on the listing's older word (read one by one when the listing ignores its id
    filter)."""
    data = load(path)
    with world(tmp_path, start=AFTER_THE_CORPUS) as w:
        instance = str(w.vast.add_instance_json(shown_instance()))
        w.vast.add_instance(actual_status="running")  # shows that the filter is ignored
        w.reach_deadline()
        w.vast.ignore_filters = True
        w.vast.answer_as("show", response_of(data["answer"]))
        report = w.run()
        assert [r.kind for r in w.vast.requests if r.kind == "show"]
        assert w.vast.mutations == []
        [action] = report.actions
        assert (action.id, action.action, action.done) == (instance, "hold", False)
        assert "not in the fresh reading" in action.reason

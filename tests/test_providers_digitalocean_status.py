"""How a droplet reads: its state (exact matches of the spec's enum, anything else unknown), its
protection (`locked`, a tag or the name carrying the marker; a protection field missing, null
or not of its type counts as protected and says which), what it bills (`size.price_hourly` in
every state but `archive`: a powered-off droplet bills its whole price, and says so), and its
id (a positive integer, or the droplet is unreadable and never deleted)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from emulators.digitalocean import DigitalOceanEmulator
from reaper.core.models import History, Instance
from reaper.core.policy import protection_reason, unreadable_exemption
from reaper.providers.digitalocean import canonical_id
from reaper.providers.digitalocean.client import POWERED_OFF_NOTE, parse_droplet
from reaper.providers.plugins import provider_host
from tests.digitalocean_support import TOKEN, on_digitalocean

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def droplet(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": 3164444,
        "name": "llm-finetune",
        "status": "off",
        "locked": False,
        "tags": ["env:prod"],
        "size": {"slug": "gpu-h100x1-80gb", "price_hourly": 3.39},
        "disk": 720,
        "created_at": "2026-11-30T15:23:36Z",
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not ...}


def read(raw: object) -> Instance:
    return parse_droplet(raw, "main", 4)


def protection(inst: Instance) -> str | None:
    return protection_reason(inst, History(), NOW, "reaper:keep")


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("new", "starting"),
        ("active", "running"),
        ("off", "stopped"),
        ("archive", "terminated"),
        ("Off", "unknown"),
        ("OFF", "unknown"),
        ("stopped", "unknown"),
        ("migrating", "unknown"),
        ("", "unknown"),
        (None, "unknown"),
        (..., "unknown"),
    ],
)
def test_the_status_is_read_by_exact_match(status: Any, state: str) -> None:
    assert read(droplet(status=status)).state == state


def test_a_status_that_is_not_a_string_is_unknown_not_a_crash() -> None:
    inst = read(droplet(status=["off"]))
    assert inst.state == "unknown"


def test_a_powered_off_droplet_bills_its_full_price_and_says_so() -> None:
    inst = read(droplet(status="off"))
    assert inst.cost_per_hour == 3.39
    assert inst.state_note == POWERED_OFF_NOTE
    assert "full price" in inst.state_note and "destroying" in inst.state_note
    assert inst.stalled is not None and "full price" in inst.stalled


@pytest.mark.parametrize(("status", "cost"), [("new", 3.39), ("active", 3.39), ("archive", 0.0)])
def test_every_state_but_archive_bills_the_hourly_price(status: str, cost: float) -> None:
    inst = read(droplet(status=status))
    assert inst.cost_per_hour == cost
    assert inst.state_note == ""


@pytest.mark.parametrize("size", [None, {}, {"price_hourly": None}, {"price_hourly": "NaN"}, ...])
def test_a_price_that_cannot_be_read_is_unknown_never_zero(size: Any) -> None:
    assert read(droplet(size=size)).cost_per_hour is None


def test_a_start_between_two_checks_cannot_be_seen() -> None:
    inst = read(droplet())
    assert inst.restart_visible is False
    assert inst.started_at is None
    assert inst.created_at == datetime(2026, 11, 30, 15, 23, 36, tzinfo=UTC)


def test_a_droplet_that_never_leaves_new_is_named_as_stuck() -> None:
    assert read(droplet(status="new")).stalled == "new, never became active"
    assert read(droplet(status="active")).stalled is None


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"locked": True}, "locked on DigitalOcean"),
        ({"tags": ["env:prod", "team:reaper:keep"]}, "a tag contains the protect marker"),
        ({"name": "eval reaper:keep"}, "name contains the protect marker"),
    ],
)
def test_a_lock_a_tag_or_the_name_protects(fields: dict[str, Any], why: str) -> None:
    reason = protection(read(droplet(**fields)))
    assert reason is not None and why in reason


@pytest.mark.parametrize(
    ("fields", "says", "state"),
    [
        ({"locked": ...}, "`locked` is missing", "stopped"),
        ({"locked": None}, "`locked` is null", "stopped"),
        ({"locked": "false"}, "`locked` is unreadable", "unknown"),
        ({"locked": 0}, "`locked` is unreadable", "unknown"),
        ({"tags": ...}, "`tags` is missing", "stopped"),
        ({"tags": None}, "`tags` is null", "stopped"),
        ({"tags": "reaper:keep"}, "`tags` is unreadable", "unknown"),
        ({"tags": ["ok", 5]}, "`tags` is unreadable", "unknown"),
        ({"tags": {"reaper:keep": True}}, "`tags` is unreadable", "unknown"),
        ({"name": ...}, "`name` is missing", "stopped"),
        ({"name": None}, "`name` is null", "stopped"),
        ({"name": 42}, "`name` is unreadable", "unknown"),
    ],
)
def test_a_protection_field_that_cannot_be_read_protects_and_is_named(
    fields: dict[str, Any], says: str, state: str
) -> None:
    inst = read(droplet(**fields))
    assert inst.protection_unreadable is not None and says in inst.protection_unreadable
    assert inst.state == state
    reason = protection(inst)
    assert reason is not None and says in reason


def test_ordinary_tags_and_an_unlocked_droplet_protect_nothing() -> None:
    inst = read(droplet(tags=["env:prod", "ml"]))
    assert inst.protection_unreadable is None
    assert protection(inst) is None
    assert inst.tags == ("env:prod", "ml")


@pytest.mark.parametrize(
    "raw_id", ["3164444", 3164444.0, True, 0, -5, None, ..., "../droplets", 10**25]
)
def test_an_id_that_is_not_a_positive_integer_is_unreadable(raw_id: Any) -> None:
    inst = read(droplet(id=raw_id))
    assert inst.id == "unreadable-4"
    assert inst.state == "unknown"
    assert inst.console_url is None


def test_a_readable_id_is_its_digits_and_links_to_the_console() -> None:
    inst = read(droplet(id=448543583))
    assert inst.id == "448543583"
    assert inst.console_url == "https://cloud.digitalocean.com/droplets/448543583"


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("3164444", "3164444"), ("003164444", "3164444"), ("0", None), ("-1", None), ("١٢", None)],
)
def test_keep_and_hosts_take_the_id_as_the_listing_spells_it(text: str, canonical: Any) -> None:
    assert canonical_id(text) == canonical


def test_a_do_host_names_its_droplet() -> None:
    assert provider_host("do-3164444") == ("digitalocean", "3164444")
    for host in ("do-", "do-abc", "do-0123", "do-3164444x", "droplet-3164444"):
        assert provider_host(host) is None


def test_an_entry_that_is_not_an_object_is_kept_as_unknown() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        kept = server.add_droplet(status="off")
        server.add_raw_droplet("garbage")
        server.add_raw_droplet({"id": "x", "status": "off"})
        fleet = on_digitalocean(server, lambda c: c.list_instances())
    assert len(fleet) == 3
    assert {i.id for i in fleet if i.state != "unknown"} == {str(kept)}


def test_one_id_listed_twice_with_different_facts_is_unknown() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        first = server.add_droplet(status="off")
        server.add_raw_droplet({**(server.droplet(first) or {}), "status": "active"})
        server.wrong_total = -1  # the server counts one droplet: its two copies
        fleet = on_digitalocean(server, lambda c: c.list_instances())
    (inst,) = fleet
    assert inst.state == "unknown"
    assert inst.raw_status.startswith("conflicting")


def test_the_names_shown_are_text() -> None:
    inst = read(droplet(name="train\u202egnp.exe", tags=["a\u202eb"]))
    assert "\u202e" not in inst.name
    assert all("\u202e" not in t for t in inst.tags)


def test_a_tag_marker_is_a_deliberate_protection_not_an_exemption() -> None:
    """A droplet whose `locked` cannot be read is protected either way; only one that nothing
    else protects is an exemption a person must hear of. A tag with the marker is deliberate."""
    tagged = read(droplet(locked=None, tags=["reaper:keep"]))
    bare = read(droplet(locked=None))
    assert not unreadable_exemption(tagged, History(), NOW, "reaper:keep")
    assert unreadable_exemption(bare, History(), NOW, "reaper:keep")

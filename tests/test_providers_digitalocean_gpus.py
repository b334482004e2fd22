"""`type=gpus` is never forgotten. Without it DigitalOcean lists the account's non-GPU droplets
only (the emulator does the same), so a listing that dropped it would read as an empty GPU
fleet: nothing stopped, nothing reaped, no alarm. Every listing request — a pass's listing, the
fresh read before a delete, the confirmation re-list — carries it, because one function builds
them all."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from urllib.parse import parse_qs

import httpx

import reaper.providers.digitalocean.client as client_module
from emulators.digitalocean import DigitalOceanEmulator
from reaper.providers.digitalocean.client import droplet_listing
from tests.digitalocean_support import TOKEN, action_of, do_world, on_digitalocean


def test_without_type_gpus_digitalocean_shows_no_gpu_droplet() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        gpu = server.add_droplet(status="off")
        plain = server.add_droplet(gpu=False, status="off")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        bare = httpx.get(f"{server.api_url}/droplets", headers=auth).json()
        gpus = httpx.get(f"{server.api_url}/droplets?type=gpus", headers=auth).json()
    assert [d["id"] for d in bare["droplets"]] == [plain]
    assert [d["id"] for d in gpus["droplets"]] == [gpu]


def test_the_client_lists_gpu_droplets_and_never_the_plain_ones() -> None:
    with DigitalOceanEmulator({"main": TOKEN}) as server:
        gpu = server.add_droplet(status="off")
        server.add_droplet(gpu=False, status="off")
        fleet = on_digitalocean(server, lambda c: c.list_instances())
    assert [i.id for i in fleet] == [str(gpu)]


def test_every_listing_of_a_whole_pass_carries_type_gpus(tmp_path: Path) -> None:
    """Listing, fresh read by listing (more droplets about to go than pages), confirmation
    re-list: the emulator saw `type=gpus` on every one."""
    with do_world(tmp_path) as w:
        doomed = [w.do.add_droplet(status="off") for _ in range(3)]
        w.do.add_droplet(status="active")
        w.do.add_droplet(gpu=False, status="off")
        w.reach_deadline()
        report = w.run()
        listings = [parse_qs(r.query) for r in w.do.requests if r.kind == "list"]
    assert [action_of(report, i) for i in doomed] == ["terminate"] * 3
    assert all(a.confirmed for a in report.actions)
    assert len(listings) >= 5  # three passes, the fresh read and the confirmation
    assert all(q.get("type") == ["gpus"] for q in listings), listings


def test_every_page_the_listing_function_builds_asks_for_gpus() -> None:
    for page in (1, 2, 7, 500):
        url, query = droplet_listing("https://api.digitalocean.com/v2", page)
        assert url == "https://api.digitalocean.com/v2/droplets"
        assert query == {"type": "gpus", "per_page": "200", "page": str(page)}


def test_no_other_code_in_the_client_builds_a_droplet_listing_url() -> None:
    """A second place that spells the listing URL could forget `type=gpus`: the only string
    that ends in `/droplets` is built inside `droplet_listing`."""
    tree = ast.parse(inspect.getsource(client_module))
    owners = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        inside_fstrings = {
            id(part)
            for node in ast.walk(function)
            if isinstance(node, ast.JoinedStr)
            for part in node.values
        }
        for node in ast.walk(function):
            text = None if id(node) in inside_fstrings else _spelt(node)
            if text is not None and text.split("?")[0].rstrip("/").endswith("/droplets"):
                owners.append(function.name)
    assert sorted(set(owners)) == ["droplet_listing"]


def _spelt(node: ast.AST) -> str | None:
    """A string literal as written, an f-string's fields as `{}`; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
        )
    return None

"""DigitalOcean is one package: outside `reaper/providers/digitalocean/`, the only code of
`reaper/` that names it is its registry line. Everything else — settings, secrets, hosts, words
in alerts — is derived from the plugin."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "reaper"
OWN = PACKAGE / "providers" / "digitalocean"
NAMED = re.compile(r"digital\s*ocean|droplet", re.IGNORECASE)
ALLOWED = {"providers/registry.py": ['"digitalocean": "reaper.providers.digitalocean",']}


def test_nothing_outside_its_package_names_digitalocean_but_the_registry() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if OWN in path.parents:
            continue
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        named = [line for line in lines if NAMED.search(line)]
        if named:
            found[path.relative_to(PACKAGE).as_posix()] = named
    assert found == ALLOWED


def test_its_package_is_a_plugin_and_a_client() -> None:
    from reaper.providers.plugins import plugin

    found = plugin("digitalocean")
    assert (found.name, found.label, found.host_prefix) == ("digitalocean", "DigitalOcean", "do-")
    assert found.client == "reaper.providers.digitalocean.client:make"
    assert (OWN / "__init__.py").is_file() and (OWN / "client.py").is_file()

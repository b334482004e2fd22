"""The house's rules, checked: no import cycles in `reaper/`; `core/` imports nothing that does
I/O or names an integration; no module of `core/` or `passes/` names a provider or a channel;
the emulators are not in the package. A change that breaks one of these says so here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "reaper"
# Every integration's name, as code or words would spell it.
NAMES = re.compile(r"runpod|vast|digitalocean|telegram|bark|ntfy|slack|discord", re.IGNORECASE)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(name: str) -> set[str]:
    """The `reaper` modules `name` imports when it runs (function-level imports included,
    imports only for the type checker left out)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            skipped |= {id(child) for child in ast.walk(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES}
    return found - {name}


GRAPH = {name: imports(name) for name in MODULES}


def test_the_import_graph_of_reaper_has_no_cycle() -> None:
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = "open"
        path.append(node)
        for target in sorted(GRAPH[node]):
            if state.get(target) == "open":
                cycle = [*path[path.index(target) :], target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[node] = "done"

    for node in sorted(GRAPH):
        if node not in state:
            visit(node)


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("reaper.core")))
def test_core_imports_nothing_that_acts_or_names_an_integration(name: str) -> None:
    forbidden = ("reaper.passes", "reaper.interfaces", "reaper.store", "reaper.clock")
    for target in GRAPH[name]:
        assert not target.startswith(forbidden), f"{name} imports {target}"
        # The plugin packages and modules of the providers and channels.
        assert not re.match(r"reaper\.(providers|channels)\.(?!base$|registry$)", target), (
            f"{name} imports {target}"
        )


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if n.startswith(("reaper.core", "reaper.passes")))
)
def test_core_and_passes_name_no_provider_and_no_channel(name: str) -> None:
    text = MODULES[name].read_text(encoding="utf-8")
    found = sorted({m.group(0).lower() for m in NAMES.finditer(text)})
    assert found == [], f"{name} names {found}"


def test_the_emulators_are_not_in_the_package() -> None:
    assert not any("emulator" in part for p in PACKAGE.rglob("*.py") for part in p.parts)
    assert (ROOT / "emulators" / "pyproject.toml").is_file()


def test_a_new_provider_is_one_package_and_one_registry_line() -> None:
    """Every registered provider is a package with its plugin and a client module; every
    registered channel a module with its plugin; nothing else lists them."""
    from reaper.channels.registry import CHANNELS
    from reaper.providers.registry import PROVIDERS

    for name, path in PROVIDERS.items():
        package = PACKAGE / "providers" / name
        assert path == f"reaper.providers.{name}" and (package / "__init__.py").is_file()
        assert (package / "client.py").is_file()
    for name, path in CHANNELS.items():
        assert path == f"reaper.channels.{name}" and (PACKAGE / "channels" / f"{name}.py").is_file()


# Where each step of a DELETE may be called from: a provider client's `terminate` only by the
# effects (so a dry run never sends one), the effects' delete only by the one gate.
DELETE_CALLS = {
    re.compile(r"\.terminate\("): "reaper/passes/context.py",
    re.compile(r"\beffects\.delete\("): "reaper/passes/gate.py",
}


def test_every_delete_goes_through_the_one_gate() -> None:
    """`grep` finds no DELETE-issuing call outside the gate (and the effects it calls)."""
    sources = [*PACKAGE.rglob("*.py"), *(ROOT / "handlers").rglob("*.py")]
    found: dict[str, set[str]] = {}
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for pattern, home in DELETE_CALLS.items():
            if pattern.search(text):
                found.setdefault(home, set()).add(str(path.relative_to(ROOT)))
    assert found == {home: {home} for home in DELETE_CALLS.values()}

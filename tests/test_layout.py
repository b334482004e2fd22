"""The house's rules, checked: each room has one floor and no import runs upward (function-level
and string-named imports included); `core/` imports nothing that does I/O; nothing outside an
integration's own package names it; every entry point wires through `app/`; the passes reach
the providers, channels and store through their ports; no file is over 600 lines; the
emulators are not in the package. A change that breaks one of these says so here.

The floors, from the ground up (a module may import its own floor and those below):
0 `reaper` itself, `log`, `text`, `capped`, `clock`; 1 `settings/`; 2 `core/`; 3 the plugins
and the store (`providers/`, `channels/`, `store/`); 4 `passes/`; 5 `app/`; 6 `interfaces/`;
7 `__main__`. A chat channel's answering side (`channels/<name>/inbound.py`, `webhook.py`:
the presses it answers, its webhook route, long poll and command) acts through the passes, so
it stands with the interfaces; its plugin names it by import path.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "reaper"
TESTS = ROOT / "tests"
# Every integration's name (and so its env prefix), as code or words would spell it; `WEBHOOK_`
# is the plain webhook channel's env prefix (`WEBHOOK_URL`), as variables spell it: the word
# alone is everyone's (a chat channel's `webhook_secret`).
NAMES = re.compile(
    r"runpod|vast|telegram|bark|ntfy|slack|discord|digitalocean|(?-i:\bWEBHOOK_)", re.IGNORECASE
)
LONGEST_FILE = 600

FLOORS: tuple[tuple[str, int], ...] = (
    ("reaper.settings", 1),
    ("reaper.core", 2),
    ("reaper.providers", 3),
    ("reaper.channels", 3),
    ("reaper.store", 3),
    ("reaper.passes", 4),
    ("reaper.app", 5),
    ("reaper.interfaces", 6),
    ("reaper.__main__", 7),
)
GROUND = ("reaper", "reaper.log", "reaper.text", "reaper.capped", "reaper.clock")
ANSWERING = re.compile(r"reaper\.channels\.\w+\.(inbound|webhook)")
# Where a module is imported by a name held in a string (`import_module`): the registries'
# lookups (a plugin by its name), the wiring (a provider's client module, an emulator), the
# HTTP route table (a route's handler, imported by the first request for it) and the chat
# channels' answering side (their long polls and webhook commands).
SEAMS = (
    "reaper.providers.plugins",
    "reaper.channels.plugins",
    "reaper.app.wiring",
    "reaper.interfaces.http",
    "reaper.interfaces.inbound",
)
# What builds a store, a provider client or a notifier: outside `app/` (and the store's own
# openers), only through `reaper.app.wiring` (`wiring.make_notifier(...)`) or its `Runtime`.
WIRING_CALLS = re.compile(
    r"(\w+\.)?\b(make_clients|make_notifier|open_store|opened_store|build_channels|SQLiteStore|"
    r"DynamoDBStore)\("
)
ENTRY_POINTS = (
    "reaper/interfaces/commands.py",
    "reaper/interfaces/monitor_commands.py",
    "reaper/interfaces/serve.py",
    "reaper/interfaces/demo.py",
    "handlers/runtime.py",
)


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


def _run_time_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs, function-level ones included (those only for the
    type checker left out)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            skipped |= {id(child) for child in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) not in skipped and isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def imports(name: str) -> set[str]:
    """The `reaper` modules `name` imports when it runs."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in _run_time_imports(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES}
    return found - {name}


def _module_of(path: str) -> str:
    """`package.module:attribute` or `package.module` -> `package.module`."""
    return path.partition(":")[0]


def string_imports() -> dict[str, set[str]]:
    """What each seam imports by a name held in a string, resolved from the registries, the
    plugins' descriptors and the route table."""
    from reaper.channels.registry import CHANNELS
    from reaper.interfaces.http import ROUTES
    from reaper.interfaces.inbound import inbound_channels
    from reaper.providers.plugins import plugins
    from reaper.providers.registry import PROVIDERS

    return {
        "reaper.interfaces.inbound": {
            _module_of(path)
            for _, inbound in inbound_channels()
            for path in (inbound.poller, inbound.command)
        },
        "reaper.providers.plugins": set(PROVIDERS.values()),
        "reaper.channels.plugins": set(CHANNELS.values()),
        "reaper.app.wiring": {_module_of(p.client) for p in plugins()},
        "reaper.interfaces.http": {
            _module_of(route.handler) for route in ROUTES if isinstance(route.handler, str)
        },
    }


GRAPH = {name: imports(name) for name in MODULES}


def _with_strings() -> dict[str, set[str]]:
    graph = {name: set(targets) for name, targets in GRAPH.items()}
    for seam, targets in string_imports().items():
        graph.setdefault(seam, set()).update(t for t in targets if t in MODULES)
    return graph


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), set()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def floor(name: str) -> int | None:
    if name in GROUND:
        return 0
    if ANSWERING.fullmatch(name):
        return 6
    for prefix, level in FLOORS:
        if name == prefix or name.startswith(prefix + "."):
            return level
    return None


def test_the_import_graph_of_reaper_has_no_cycle() -> None:
    """Function-level and string-named imports included: a plugin that imported its loader
    would be a cycle the static graph alone cannot see."""
    graph = _with_strings()
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, set())):
            if state.get(target) == "open":
                cycle = [*path[path.index(target) :], target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_every_module_of_reaper_stands_on_a_floor() -> None:
    assert sorted(name for name in MODULES if floor(name) is None) == []


def test_no_import_runs_upward() -> None:
    """Function-level and string-named imports included."""
    upward = [
        f"{name} (floor {floor(name)}) imports {target} (floor {floor(target)})"
        for name, targets in sorted(_with_strings().items())
        for target in sorted(targets)
        if (floor(target) or 0) > (floor(name) or 0)
    ]
    assert upward == []


def test_a_name_held_in_a_string_names_a_module_that_never_imports_its_loader() -> None:
    """Each plugin, client module and route handler named in a registry, a descriptor or the
    route table exists, and none imports (even through another module) the seam that
    imports it by name."""
    graph = _with_strings()
    for seam, targets in string_imports().items():
        for target in sorted(targets):
            assert target in MODULES, f"{seam} names {target}, which does not exist"
            assert seam not in _closure(graph, target), f"{target} imports its loader {seam}"


def test_only_the_seams_import_a_module_by_name() -> None:
    found = sorted(
        name
        for name, path in MODULES.items()
        if re.search(r"\bimport_module\(|__import__\(", path.read_text(encoding="utf-8"))
    )
    assert set(found) <= set(SEAMS), f"importing by name outside the seams: {found}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("reaper.core")))
def test_core_imports_nothing_that_acts_or_names_an_integration(name: str) -> None:
    forbidden = ("reaper.passes", "reaper.interfaces", "reaper.store", "reaper.clock", "reaper.app")
    for target in GRAPH[name]:
        assert not target.startswith(forbidden), f"{name} imports {target}"
        assert not target.startswith(("reaper.providers", "reaper.channels")), (
            f"{name} imports {target}"
        )


def _own_package(path: Path) -> str | None:
    """The integration whose own package (or module) `path` is, if any."""
    from reaper.channels.registry import CHANNELS
    from reaper.providers.registry import PROVIDERS

    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if len(parts) >= 2 and parts[0] == "providers" and parts[1] in PROVIDERS:
        return parts[1]
    if len(parts) >= 2 and parts[0] == "channels" and parts[1] in CHANNELS:
        return parts[1]
    return None


REGISTRIES = (PACKAGE / "providers" / "registry.py", PACKAGE / "channels" / "registry.py")


def test_nothing_outside_an_integrations_own_package_names_it() -> None:
    """Provider and channel names and their env prefixes appear only in the integration's own
    package (and its one line in its registry); an integration names no other."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in REGISTRIES:
            continue
        own = _own_package(path)
        names = {m.group(0).lower() for m in NAMES.finditer(path.read_text(encoding="utf-8"))}
        others = sorted(n for n in names if own is None or not n.startswith(own))
        if others:
            found[str(path.relative_to(ROOT))] = others
    assert found == {}


def test_every_registry_line_names_its_own_package() -> None:
    from reaper.channels.registry import CHANNELS
    from reaper.providers.registry import PROVIDERS

    for name, path in PROVIDERS.items():
        assert path == f"reaper.providers.{name}", path
    for name, path in CHANNELS.items():
        assert path == f"reaper.channels.{name}", path


def test_every_entry_point_wires_through_app() -> None:
    """The CLI's commands, `serve`, the Lambda handlers, the demo and the emulators get their
    store, clients, notifier and clock from `app/`: nothing else builds one."""
    sources = [*PACKAGE.rglob("*.py"), *(ROOT / "handlers").rglob("*.py")]
    builders = {
        f"{path.relative_to(ROOT)}: {call.group(0)}"
        for path in sources
        if not str(path.relative_to(ROOT)).startswith(("reaper/app/", "reaper/store/"))
        for call in WIRING_CALLS.finditer(path.read_text(encoding="utf-8"))
        if call.group(1) not in ("wiring.", "runtime.")
    }
    assert builders == set()
    for entry in ENTRY_POINTS:
        text = (ROOT / entry).read_text(encoding="utf-8")
        assert re.search(r"^from reaper\.app\b|^from reaper import app\b", text, re.M), entry


# What the passes may see of the plugins and the store: their ports (the protocols), the
# providers' lookups by name, and the dry run's recording store (a port over any store).
PORTS = {
    "reaper.providers": {"reaper.providers.base", "reaper.providers.plugins"},
    "reaper.channels": {"reaper.channels.base"},
    "reaper.store": {"reaper.store.ports", "reaper.store.recording"},
}


def test_the_passes_import_only_the_ports_of_providers_channels_and_store() -> None:
    found = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name.startswith("reaper.passes")
        for target in targets
        for room, allowed in PORTS.items()
        if (target == room or target.startswith(room + ".")) and target not in allowed
    )
    assert found == []


def test_no_file_in_reaper_is_over_600_lines() -> None:
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in lengths.items() if n > LONGEST_FILE} == {}


def test_no_test_module_imports_another_test_module() -> None:
    """What tests share lives in support modules (`*_support.py`, `fakes/`, `store_contract`)."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            if any(t.rpartition(".")[2].startswith("test_") for t in targets):
                found.append(f"{path.name} imports {targets}")
    assert found == []


def test_the_emulators_are_not_in_the_package() -> None:
    assert not any("emulator" in part for p in PACKAGE.rglob("*.py") for part in p.parts)
    assert (ROOT / "emulators" / "pyproject.toml").is_file()


def test_a_new_provider_is_one_package_and_one_registry_line() -> None:
    """Every registered provider is a package with its plugin and a client module; every
    registered channel a module (or a package) with its plugin."""
    from reaper.channels.registry import CHANNELS
    from reaper.providers.registry import PROVIDERS

    for name in PROVIDERS:
        package = PACKAGE / "providers" / name
        assert (package / "__init__.py").is_file()
        assert (package / "client.py").is_file()
    for name in CHANNELS:
        channels = PACKAGE / "channels"
        assert (channels / f"{name}.py").is_file() or (channels / name / "__init__.py").is_file()


# Where each step of a DELETE may be called from: a provider client's `terminate` only by the
# effects (so a dry run never sends one), the effects' delete only by the one gate.
DELETE_CALLS = {
    re.compile(r"\.terminate\("): "reaper/passes/context.py",
    re.compile(r"\beffects\.delete\("): "reaper/passes/reap/gate.py",
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

"""The `reaper` package does not depend on its test doubles: no module of it imports the
emulators when it is imported (the demo and `reaper emulate` import them when they run)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "reaper"


def _module_level_imports(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in tree.body:  # top-level statements only; `if TYPE_CHECKING:` is not run
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Try):
            for inner in node.body:
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    found |= _module_level_imports(ast.Module(body=[inner], type_ignores=[]))
    return found


def test_no_module_of_reaper_imports_the_emulators_at_import_time() -> None:
    offenders = [
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if any(
            name == "emulators" or name.startswith("emulators.")
            for name in _module_level_imports(ast.parse(path.read_text(encoding="utf-8")))
        )
    ]
    assert offenders == []


def test_every_module_of_reaper_imports_without_the_emulators() -> None:
    modules = sorted(
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in PACKAGE.rglob("*.py")
        if p.name != "__main__.py"
    )
    code = (
        "import importlib, sys\n"
        "sys.modules['emulators'] = None\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"

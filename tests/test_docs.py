"""The README is one page of getting started; the reference lives in `docs/`, and both stay true:
every page is linked from the README, every link and anchor resolves, every setting reaper reads
is in the configuration page, every command in the command-line page and every route in the
HTTP page, and nothing cites a file outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reaper.app.known import OTHER_VARIABLES
from reaper.app.settings import known_variables
from reaper.interfaces.cli import build_parser
from reaper.interfaces.http import INBOUND_WORDS, ROUTES
from reaper.providers.plugins import plugins

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
README = ROOT / "README.md"
# What a newcomer reads first fits on a page or two of a screen: the reference is linked.
README_MAX_LINES = 200
# Variables of the project's own tooling, not settings a user gives reaper.
TOOLING = {
    "REAPER_ARTIFACTS",
    "REAPER_BUILD_DIR",
    "REAPER_PYTHON",
    "REAPER_PYTHON312",
    "IDLE_WATCH_LOOP",
    "IDLE_WATCH_MAX_LOOPS",
    "IDLE_WATCH_SLEEP",
}
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.M)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in _HEADING.findall(path.read_text(encoding="utf-8"))}


def links(path: Path) -> list[str]:
    """The link targets of a page, outside code (a code block may show a link's shape)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return _LINK.findall(re.sub(r"`[^`\n]*`", "", text))


def text_of(*paths: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in paths)


def test_the_readme_is_one_page_and_links_every_reference_page() -> None:
    readme = README.read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    linked = {Path(target.split("#")[0]).name for target in links(README)}
    assert PAGES, "docs/ holds the reference"
    assert [p.name for p in PAGES if p.name not in linked] == []
    for command in ("make demo", "make test"):
        assert command in readme


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_every_link_and_anchor_resolves(page: Path) -> None:
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # http(s):, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        assert linked.exists(), f"{page.name}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{page.name}: no heading for #{anchor}"


def test_every_setting_is_documented() -> None:
    configuration = text_of(DOCS / "configuration.md")
    everywhere = text_of(README, *PAGES)
    kit = {name for plugin in plugins() for name in plugin.kit.variables}
    settings = set(known_variables()) - set(OTHER_VARIABLES) - kit
    assert [v for v in sorted(settings) if f"`{v}`" not in configuration] == []
    tooling_and_kit = (set(OTHER_VARIABLES) | kit) - TOOLING
    assert [v for v in sorted(tooling_and_kit) if v not in everywhere] == []


def test_every_command_is_documented() -> None:
    commands = text_of(DOCS / "commands.md")
    parser = build_parser()
    [subparsers] = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    assert [c for c in subparsers.choices if f"reaper {c}" not in commands] == []


def test_every_route_is_documented() -> None:
    """A chat channel's webhook route starts with its name (a segment only it accepts)."""
    api = text_of(DOCS / "http-api.md", DOCS / "status-page.md", DOCS / "alerts.md")
    firsts = [route.path[0] if route.path else "" for route in ROUTES]
    words = [w for w in firsts if isinstance(w, str)] + list(INBOUND_WORDS)
    assert [w for w in words if f"/{w}" not in api] == []


def test_nothing_cites_a_file_outside_the_repository() -> None:
    for page in (README, *PAGES):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"DESIGN\.md|ARCHITECTURE\.md|\.\./shared|shared/reference", text), (
            page.name
        )


def _synopsis() -> list[str]:
    """The lines of the command-line page's synopsis: its first code block."""
    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    return page.split("```\n", 2)[1].splitlines()


def test_every_flag_of_every_command_is_in_the_synopsis() -> None:
    parser = build_parser()
    [subparsers] = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    missing = []
    for name, command in subparsers.choices.items():
        shown = " ".join(
            line.split("#")[0] for line in _synopsis() if f"reaper {name} " in line + " "
        )
        flags = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
        missing += [f"{name} {flag}" for flag in flags if flag not in shown and flag != "--help"]
    assert missing == []


def test_no_synopsis_line_is_there_twice() -> None:
    commands = [line.split("#")[0].strip() for line in _synopsis()]
    assert sorted({c for c in commands if commands.count(c) > 1}) == []


def test_the_reap_json_schema_names_every_provider() -> None:
    page = (DOCS / "commands.md").read_text(encoding="utf-8")
    schema = page[page.index("### `reaper reap --json`") :]
    names = "|".join(f'"{provider.name}"' for provider in plugins())
    assert f'"provider": {names},' in schema

"""Reading the providers' copied OpenAPI documents as JSON Schema, for the tests that check the
emulators' answers against them."""

from __future__ import annotations

from typing import Any


def openapi30_to_jsonschema(node: Any) -> Any:
    """OpenAPI 3.0 `nullable: true` is JSON Schema's `type: [T, "null"]` (and a null in any
    `enum`); everything else in these files is valid 2020-12 as it stands."""
    if isinstance(node, list):
        return [openapi30_to_jsonschema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {k: openapi30_to_jsonschema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True:
        if isinstance(converted.get("type"), str):
            converted["type"] = [converted["type"], "null"]
        if isinstance(converted.get("enum"), list):
            converted["enum"] = [*converted["enum"], None]
    return converted


def pointer(*parts: str) -> str:
    """A JSON pointer of `parts`, each escaped."""
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)

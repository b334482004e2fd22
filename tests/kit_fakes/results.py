"""A results directory to save: a few files of every awkward kind, and what the kit's
manifest must say about them."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

MIB = 1024 * 1024


def sample_files() -> dict[str, bytes]:
    """A multipart-sized checkpoint (three 5 MiB parts), an empty file, a name with spaces
    and unicode, a nested JSON."""
    rng = random.Random(18)
    return {
        "checkpoints/model.pt": rng.randbytes(11 * MIB + 123),
        "empty.log": b"",
        "eval/metrics.json": b'{"loss": 0.125, "acc": 0.9}\n',
        "my results/résumé 中文 (final).txt": "done: 正确\n".encode(),
    }


def write_files(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def manifest_lines(files: dict[str, bytes]) -> list[dict[str, object]]:
    return [
        {"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for rel, data in sorted(files.items())
    ]


def read_manifest(root: Path) -> dict[str, object]:
    return json.loads((root / "MANIFEST.json").read_text())  # type: ignore[no-any-return]

"""Every keep and unkeep, wherever a person asks it, is a record saying who, through what and
when: `reaper keep`/`unkeep` on the command line and the status page's buttons leave the same
audit trail as the phone's (`reaper audit`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.reap_support import cli, world


def test_the_command_line_keep_and_unkeep_are_audited(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED", name="precious")
        w.run()
        kept = cli(w, "keep", f"runpod:{pod}", "--for", "3d")
        assert kept.returncode == 0, kept.stderr
        ended = cli(w, "unkeep", f"runpod:{pod}")
        assert ended.returncode == 0, ended.stderr
        again = cli(w, "unkeep", f"runpod:{pod}")
        assert again.returncode == 0
        audit = cli(w, "audit", "--json")
        actions = json.loads(audit.stdout)["actions"]
        assert [(a["kind"], a["done"], a["via"]) for a in actions] == [
            ("keep", True, "command line"),
            ("unkeep", True, "command line"),
            ("unkeep", False, "command line"),
        ]
        assert all(a["targets"] == [f"runpod:{pod}"] for a in actions)
        assert all("command line" in a["by"] for a in actions)
        store = w.store(read_only=True)
        try:
            assert f"runpod:{pod}" not in store.history().kept
        finally:
            store.close()


def test_a_command_line_keep_says_who_kept_it(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        assert cli(w, "keep", f"runpod:{pod}").returncode == 0
        store = w.store(read_only=True)
        try:
            record = store.history().kept[f"runpod:{pod}"]
        finally:
            store.close()
        # Without --for: a week, never for ever by default.
        assert record.until is not None
        assert record.until - record.since == timedelta(days=7)
        assert "command line" in record.by


def test_keep_for_forever_is_explicit(tmp_path: Path) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="EXITED")
        w.run()
        kept = cli(w, "keep", f"runpod:{pod}", "--for", "forever")
        assert kept.returncode == 0 and "until `reaper unkeep`" in kept.stdout
        store = w.store(read_only=True)
        try:
            assert store.history().kept[f"runpod:{pod}"].until is None
        finally:
            store.close()

"""`reaper reap --json` prints strict JSON even when a provider answers `"cost": NaN` (which
Python's json reads): the field is unreadable, never a bare `NaN` in the output."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.reap_support import cli, world


def strict(text: str) -> object:
    def refuse(token: str) -> object:
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_reap_json_is_strict_when_a_provider_sends_a_non_finite_cost(
    tmp_path: Path, bad: float
) -> None:
    with world(tmp_path, start=datetime.now(UTC)) as w:
        pod = w.runpod.add_pod(status="RUNNING", name="p", cost=bad)
        instance = w.vast.add_instance(actual_status="running", dph_total=bad)
        result = cli(w, "reap", "--json")
    assert result.returncode == 0, result.stderr
    output = strict(result.stdout)
    assert isinstance(output, dict)
    listed = json.dumps(output)
    assert pod in listed and str(instance) in listed

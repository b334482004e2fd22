"""Review ("Act on what the provider shows now": deleted only if the fresh read still shows it
stopped, in the same stretch, unprotected *and not kept*).

The gate reads the store's history once per round of deletes and checks every delete of the
round against it before any of them is sent; the DELETEs then wait their turn for the account's
concurrency slot (after 429s the adaptive limit is down to one) or its rate-limit window. A keep
recorded while a DELETE waits — `reaper keep`, or "Keep 1 day" pressed on the phone, answered
"kept" — does not stop it: the pod the person just kept is deleted seconds later.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from reaper.passes import keeping
from reaper.providers.http import HttpOptions
from tests.reap_support import world

# The account's requests one at a time, as the adaptive limit leaves them after a 429 storm.
ONE_AT_A_TIME = HttpOptions(
    timeout=2.0, max_attempts=2, backoff_base=0.01, backoff_cap=0.02, max_concurrency=1
)


def test_a_pod_kept_while_its_delete_waits_for_a_slot_is_not_deleted(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        pods = [w.runpod.add_pod(status="EXITED", name=f"job-{n}") for n in (1, 2)]
        w.runpod.add_pod(status="RUNNING", name="witness")
        w.reach_deadline()
        kept: list[str] = []

        def keep_the_other() -> None:
            """Right after the first DELETE is answered, the person keeps the pod still there."""
            [other] = [p for p in pods if w.runpod.pod(p) is not None]
            store = w.store()
            try:
                now = w.clock.now()
                keeping.keep(
                    store, f"runpod:{other}", now=now, until=now + timedelta(days=1),
                    by="me", via="command line",
                )  # fmt: skip
            finally:
                store.close()
            kept.append(other)

        w.runpod.after_next("delete", keep_the_other)
        w.run(http=ONE_AT_A_TIME)

        [other] = kept
        deletes = [m.path for m in w.runpod.mutations if m.method == "DELETE"]
        assert len(deletes) >= 1
        assert not any(path.endswith(other) for path in deletes), (
            f"{other} was kept before its DELETE left, and deleted: {deletes}"
        )
        assert w.runpod.pod(other) is not None

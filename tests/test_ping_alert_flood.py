"""A ping-key holder cannot drown the phone: alerts raised by pings (a new monitor, `/fail`,
back up) share per-host and overall budgets; past them they are held and go out folded into
one message, not dropped; a listed instance's alerts always go out. Counted at the Telegram
fake, over loopback HTTP."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.heartbeat_support import KEY
from tests.phone_support import phone


def test_forty_junk_hosts_make_a_bounded_number_of_messages(tmp_path: Path) -> None:
    with phone(tmp_path, ping_key=KEY) as p:
        assert p.telegram is not None
        pod = p.w.runpod.add_pod(status="RUNNING", name="trainer")
        p.run()  # the listing that shows the pod
        with p.served() as app:
            before = len(p.telegram.messages)
            for n in range(40):
                assert app.ping(f"junk-{n}").status_code == 200
                assert app.ping(f"junk-{n}", "fail").status_code == 200
            flood = len(p.telegram.messages) - before
            assert flood <= 10, flood

            # a real instance's failure still reaches the phone at once
            assert app.ping(f"runpod-{pod}").status_code == 200
            assert app.ping(f"runpod-{pod}", "fail").status_code == 200
            assert any(f"runpod-{pod}" in m.text for m in p.telegram.messages[before + flood :])

            # nothing is dropped: after the window, one message folds what was held back
            p.w.clock.advance(timedelta(seconds=61))
            shown = len(p.telegram.messages)
            assert app.ping("junk-late").status_code == 200
            folds = [m for m in p.telegram.messages[shown:] if "held back" in m.text]
            assert len(folds) == 1
            assert "junk-39" in folds[0].text or "and " in folds[0].text
            assert len(p.telegram.messages) - before <= 14


def test_a_flood_of_new_hosts_folds_into_one_line(tmp_path: Path) -> None:
    with phone(tmp_path, ping_key=KEY) as p, p.served() as app:
        assert p.telegram is not None
        for n in range(40):
            app.ping(f"new-{n}")
        p.w.clock.advance(timedelta(seconds=61))
        app.ping("new-last")
        texts = [m.text for m in p.telegram.messages]
        assert len(texts) <= 12
        [fold] = [t for t in texts if "monitors appeared in one minute" in t]
        assert fold.splitlines()[0].startswith("30 monitors appeared in one minute: new-10")

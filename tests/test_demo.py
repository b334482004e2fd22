"""`reaper demo` shows the whole product, with no key, on a fake clock, in seconds: first sight,
a watchdog going silent while its pod bills (with the $/h), a job's message forwarded through
`/alert`, the on-instance kit ending a job (dry run), the warning, the termination and its proof."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def demo(tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reaper", "demo"],
        cwd=tmp_path,
        env={"PATH": path, "HOME": str(tmp_path)},  # no key, no setting of any kind
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> str:
    done = demo(tmp_path_factory.mktemp("demo"), os.environ["PATH"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_watchdog_goes_silent_while_its_pod_bills(output: str) -> None:
    assert "the dead-man's switch" in output
    assert (
        "📱 [critical] Watchdog silent while llm-finetune (runpod:llm-finetune-a1) bills $1.64/h"
        in output
    )


def test_a_jobs_message_is_forwarded_through_alert(output: str) -> None:
    assert "$NOTIFY_URL   → HTTP 200" in output
    assert "📱 [warning] 📟 vast-4242001: eval-harness finished" in output


@pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("curl") is None, reason="needs bash and curl"
)
def test_the_kit_ends_a_job_in_a_dry_run(output: str) -> None:
    assert "[run.sh] dry run: would destroy RunPod pod llm-finetune-a1" in output
    assert "run.sh exited 0" in output
    assert "📱 [info] runpod-llm-finetune-a1: heartbeat back after" in output
    assert "DRY_RUN=1: not destroying this instance" in output


def test_the_reap_loop_warns_terminates_and_proves_it(output: str) -> None:
    assert output.count("📱 [warning]") >= 3
    assert "will be terminated in 1h (2026-11-28 18:00 UTC)" in output
    assert output.count("terminated  stopped for 1d") == 3
    assert "Terminated sweep-lr-3e-4 (runpod:sweep-lr-3e4-b2)" in output
    assert "Terminated l40s-render (digitalocean:448543584)" in output
    assert "A powered-off droplet still bills its full price" in output
    assert "Mutating calls the emulators received: RunPod 1, Vast 1, DigitalOcean 1." in output
    assert "Vast demo: balance lasts about" in output  # the runway guard


def test_every_table_reads_in_human_time(output: str) -> None:
    import re

    assert re.search(r"\d\dT\d\d:\d\d", output) is None  # no ISO instants, no microseconds
    assert "reap at 2026-11-27 18:00 UTC (mode enforce)" in output


def test_without_bash_the_kit_scene_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = demo(tmp_path, str(empty))
    assert done.returncode == 0, done.stderr
    assert "skipped: the kit needs bash and curl, not found on this machine" in done.stdout
    assert "Watchdog silent while llm-finetune" in done.stdout


def test_the_warnings_show_the_phone_buttons(output: str) -> None:
    warned = output.split("will be terminated in 1h", 1)[1]
    assert "[Keep 1 day] [Keep 1 week] [Terminate now]" in warned.split("📱", 2)[1]
    silent = output.split("Watchdog silent while", 1)[1]
    assert "[Mute 1 day]" in silent.split("📱", 1)[0]


def test_the_status_page_address_is_printed(output: str) -> None:
    assert re.search(r"status page: http://127\.0\.0\.1:\d+/ \(admin key demo-", output)


def test_keep_pressed_on_the_phone_spares_the_instance_in_the_next_pass(output: str) -> None:
    """The warning reached the emulated phone through reaper's ntfy channel; its Keep button
    is a link to the demo's own server, and pass 4 leaves that instance alone."""
    pressed = output.split("on the phone: Keep 1 day", 1)[1]
    assert "pressed under: bid-a100-sweep (vast:4242002) will be terminated" in pressed
    assert "→ HTTP 200: Kept bid-a100-sweep (vast:4242002) until" in pressed
    pass_4 = output.split("━━ pass 4", 1)[1].split("━━ pass 5", 1)[0]
    [row] = [line for line in pass_4.splitlines() if line.startswith("vast ") and "4242002" in line]
    assert "protect" in row and "kept" in row
    assert "Terminated bid-a100-sweep" not in output


def test_the_last_line_says_how_to_keep_the_page_up(output: str) -> None:
    last = output.strip().splitlines()[-1]
    assert re.search(r"status page \(http://127\.0\.0\.1:\d+/\) and the phone stopped", last)
    assert last.endswith("demo --serve` keeps them up until Ctrl-C."), last


def test_the_sample_in_the_docs_is_what_the_demo_prints(output: str) -> None:
    """docs/demo.md shows parts of a run ("..." for the rest): every line it shows is one the
    demo prints (any port), so the page cannot drift from the demo."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "demo.md").read_text(encoding="utf-8")
    start = page.index("```\n━━ ") + 4
    sample = page[start : page.index("```\n", start)].splitlines()

    def any_port(line: str) -> str:
        return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line)

    printed = {any_port(line) for line in output.splitlines()}
    stale = [line for line in sample if line != "..." and any_port(line) not in printed]
    assert stale == [], "docs/demo.md shows lines the demo no longer prints: update the sample"

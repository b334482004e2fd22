"""Whatever goes wrong between the results and the store, the instance is kept: a wrong
bucket, a refused or expired credential, a store that drops an object or misreports it, a
full disk under the manifest, a file that changes while it is uploaded, a name that cannot be
a key. Never a destroy; always one notify with the reason, then one failure ping (the job's
exit status, or /fail after a job that succeeded), and KEEP_FILE touched so that idle-watch
waits too."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import POD_KEY, Kit
from tests.kit_fakes.results import sample_files, write_files
from tests.kit_fakes.s3 import Store, s3_store


@pytest.fixture
def store() -> Iterator[Store]:
    with s3_store() as s:
        yield s


@pytest.fixture
def kit(tmp_path: Path, store: Store) -> Iterator[Kit]:
    (tmp_path / "results").mkdir()
    write_files(tmp_path / "results", sample_files())
    with Kit.start(tmp_path) as k:
        k.env |= {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY}
        k.env |= {"RESULTS_DIR": str(tmp_path / "results"), **store.env()}
        k.add_pod("pod-1")
        yield k


def kept(kit: Kit, **env: str) -> str:
    """Runs a job that exits 3 and checks that the instance was kept; returns the notify."""
    done = kit.run("run.sh", "bash", "-c", "exit 3", timeout=60, **env)

    assert done.returncode == 3, done.stderr
    assert kit.deletes() == []
    assert kit.runpod.pod("pod-1") is not None
    assert kit.events() == ["ping:start", "notify", "ping:3"]
    [(_, _, fail_body)] = [p for p in kit.pings() if p[1] == "3"]
    assert fail_body.startswith(
        "run.sh: job exited with status 3; results not safe, instance kept: results NOT safe: "
    )
    assert Path(kit.env["KEEP_FILE"]).exists()
    [alert] = kit.notifies()
    assert alert.title == "runpod-pod-1: job FAILED (exit 3), results NOT safe, instance KEPT"
    assert alert.level == "critical"
    assert "The results are only on this instance" in alert.body
    return alert.text


def test_a_wrong_bucket(kit: Kit, store: Store) -> None:
    alert = kept(kit, RESULTS_URL="s3://no-such-bucket-18/runs")

    assert "the store answered HTTP 404 NoSuchBucket" in alert


def test_an_expired_credential(kit: Kit, store: Store) -> None:
    store.proxy.refuse_all(400, "ExpiredToken", "The provided token has expired.")

    alert = kept(kit)

    assert "HTTP 400 ExpiredToken: The provided token has expired." in alert


def test_a_key_the_store_does_not_know(kit: Kit) -> None:
    alert = kept(kit, AWS_ACCESS_KEY_ID="AKIAEXAMPLEUNKNOWN01")

    assert "HTTP 403 InvalidAccessKeyId" in alert
    assert "AKIAEXAMPLEUNKNOWN01" not in alert


def test_a_wrong_secret_fails_the_signature(kit: Kit) -> None:
    alert = kept(kit, AWS_SECRET_ACCESS_KEY="not-the-secret")

    assert "HTTP 403 SignatureDoesNotMatch" in alert
    assert "not-the-secret" not in alert


def test_no_credential_at_all(kit: Kit) -> None:
    alert = kept(kit, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None)  # type: ignore[arg-type]

    assert "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set" in alert


LIES: dict[str, tuple[Callable[[Store], None], dict[str, str], str]] = {
    "drops an object": (
        lambda s: s.proxy.drop("eval/metrics.json"),
        {},
        "eval/metrics.json (missing in the store)",
    ),
    "reports a wrong size": (
        lambda s: s.proxy.misreport("checkpoints/model.pt", content_length="5242880"),
        {},
        f"checkpoints/model.pt (5242880 bytes in the store, {11 * 1024 * 1024 + 123} here)",
    ),
    "reports another checksum": (
        lambda s: s.proxy.misreport("empty.log", x_amz_checksum_sha256="AAAA"),
        {},
        "empty.log (SHA-256 differs in the store)",
    ),
    "reports another etag": (
        lambda s: s.proxy.misreport("model.pt", etag='"0123456789abcdef0123456789abcdef-3"'),
        {"S3_CHECKSUM": "off"},
        "checkpoints/model.pt (ETag differs in the store)",
    ),
}


@pytest.mark.parametrize("lie", LIES)
def test_a_store_that_lies(kit: Kit, store: Store, lie: str) -> None:
    arrange, env, reason = LIES[lie]
    arrange(store)

    alert = kept(kit, **env)

    assert "objects at s3://" in alert and "not verified: " in alert
    assert reason in alert


@pytest.mark.parametrize("checksum", ["sha256", "off"])
def test_an_object_replaced_in_the_store_before_the_verification(
    kit: Kit, store: Store, checksum: str
) -> None:
    """Tampered in moto itself between its upload and the read-back: same size, other bytes."""

    def tamper(manifest_key: str) -> None:
        key = manifest_key.removesuffix("MANIFEST.json") + "eval/metrics.json"
        size = len(sample_files()["eval/metrics.json"])
        store.client.put_object(Bucket=store.bucket, Key=key, Body=b"x" * size)

    store.proxy.on_upload("MANIFEST.json", tamper)

    alert = kept(kit, S3_CHECKSUM=checksum)

    assert "eval/metrics.json (ETag differs in the store)" in alert


def test_an_object_deleted_from_the_store_before_the_verification(kit: Kit, store: Store) -> None:
    def vanish(manifest_key: str) -> None:
        store.delete(manifest_key.removesuffix("MANIFEST.json") + "checkpoints/model.pt")

    store.proxy.on_upload("MANIFEST.json", vanish)

    alert = kept(kit)

    assert "checkpoints/model.pt (missing in the store)" in alert


def test_a_disk_that_fills_while_the_manifest_is_written(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    (tmp_path / "results" / ".MANIFEST.json.partial").symlink_to("/dev/full")

    alert = kept(kit)

    assert "cannot write MANIFEST.json: No space left on device" in alert
    assert store.objects() == {}
    assert not (tmp_path / "results" / "MANIFEST.json").exists()


def test_a_file_that_changes_while_it_is_uploaded(kit: Kit, store: Store, tmp_path: Path) -> None:
    metrics = tmp_path / "results" / "eval" / "metrics.json"

    def append(_key: str) -> None:
        with metrics.open("a") as f:
            f.write('{"late": true}\n')

    store.proxy.on_upload("eval/metrics.json", append)

    alert = kept(kit)

    assert "changed while they were saved: eval/metrics.json (changed: 28 B then 43 B)" in alert
    assert not any(key.endswith("MANIFEST.json") for key in store.objects())


def test_a_file_that_appears_while_the_others_are_uploaded(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    def arrive(_key: str) -> None:
        (tmp_path / "results" / "late.txt").write_text("late")

    store.proxy.on_upload("empty.log", arrive)

    alert = kept(kit)

    assert "late.txt (new)" in alert


def test_a_name_that_is_not_utf8_cannot_be_a_key(kit: Kit, tmp_path: Path) -> None:
    with open(os.path.join(os.fsencode(tmp_path / "results"), b"bad\xff.bin"), "wb") as f:
        f.write(b"data")

    alert = kept(kit)

    assert "bad\\xff.bin: its name is not UTF-8" in alert


def test_results_dir_without_results_url(kit: Kit) -> None:
    alert = kept(kit, RESULTS_URL=None)  # type: ignore[arg-type]

    assert "RESULTS_DIR and RESULTS_URL go together" in alert


def test_a_results_dir_that_is_not_there(kit: Kit, tmp_path: Path) -> None:
    alert = kept(kit, RESULTS_DIR=str(tmp_path / "nowhere"))

    assert "nowhere is not a directory" in alert


@pytest.mark.parametrize("url", ["s3://Bad_Bucket/x", "ftp://host/x", "s3://"])
def test_a_results_url_that_is_not_one(kit: Kit, url: str) -> None:
    alert = kept(kit, RESULTS_URL=url)

    assert "RESULTS_URL is" in alert


def test_a_save_that_hangs_is_cut_off(kit: Kit, store: Store) -> None:
    store.proxy.slow(5)

    alert = kept(kit, PUSH_TIMEOUT="1")

    assert "the save was cut off after 1s (PUSH_TIMEOUT)" in alert


def test_a_store_that_asks_to_slow_down_is_retried_and_the_save_completes(
    kit: Kit, store: Store
) -> None:
    store.proxy.fail_next(3, status=503, code="SlowDown")

    done = kit.run("run.sh", "true", timeout=60)

    assert done.returncode == 0
    assert done.stderr.count("HTTP 503 SlowDown: Please reduce your request rate.; retry") == 3
    assert "results safe: 4 files" in kit.alerts()[0]
    assert len(kit.deletes()) == 1


def test_the_keys_are_in_no_process_listing_during_the_upload(kit: Kit, store: Store) -> None:
    listings: list[str] = []

    def snapshot(_key: str) -> None:
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                listings.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue

    store.proxy.on_upload("model.pt", snapshot)

    done = kit.run("run.sh", "true", timeout=60)

    assert done.returncode == 0
    assert any("results.py save" in line for line in listings)
    for secret in (store.moto.secret, store.moto.key_id, POD_KEY):
        assert not any(secret in line for line in listings)

"""Results to an S3-compatible store (moto's server, IAM signatures checked): run.sh's exit
path writes the manifest, uploads every file byte for byte under a per-run prefix (large ones
in parts), the manifest last, reads it all back, and only then destroys; the notify says what
was saved where."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import POD_KEY, Kit, no_secret_in
from tests.kit_fakes.results import manifest_lines, read_manifest, sample_files, write_files
from tests.kit_fakes.s3 import Store, s3_store

RUN_PREFIX = re.compile(r"runs/runpod-pod-1/\d{8}T\d{6}Z/")


@pytest.fixture
def store() -> Iterator[Store]:
    with s3_store() as s:
        yield s


@pytest.fixture
def kit(tmp_path: Path, store: Store) -> Iterator[Kit]:
    (tmp_path / "results").mkdir()
    with Kit.start(tmp_path) as k:
        k.env |= {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY}
        k.env |= {"RESULTS_DIR": str(tmp_path / "results"), **store.env()}
        k.add_pod("pod-1")
        yield k


def saved(store: Store) -> tuple[str, dict[str, bytes]]:
    """The one run prefix in the bucket, and its objects by relative path."""
    objects = store.objects()
    prefixes = {RUN_PREFIX.match(key)[0] for key in objects if RUN_PREFIX.match(key)}  # type: ignore[index]
    assert len(prefixes) == 1, sorted(objects)
    [prefix] = prefixes
    assert all(key.startswith(prefix) for key in objects)
    return prefix, {key.removeprefix(prefix): data for key, data in objects.items()}


def test_every_file_arrives_byte_identical_then_the_instance_is_destroyed(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    files = sample_files()
    write_files(tmp_path / "results", files)

    done = kit.run("run.sh", "true", timeout=60)

    assert done.returncode == 0, done.stderr
    prefix, objects = saved(store)
    local_manifest = (tmp_path / "results" / "MANIFEST.json").read_bytes()
    assert objects == {**files, "MANIFEST.json": local_manifest}
    assert kit.events() == ["ping:start", "ping", "notify", "ping:0", "ping:bye", "delete"]
    assert kit.runpod.pod("pod-1") is None
    [alert] = kit.notifies()
    where = f"s3://{store.bucket}/{prefix}"
    assert alert.title == "runpod-pod-1: job done, results saved, destroying"
    assert alert.body == (
        f"run.sh: job exited with status 0; results safe: 4 files, 11.5 MB, "
        f"{where} verified; destroying this instance"
    )
    assert no_secret_in(done.stdout + done.stderr)
    assert store.moto.secret not in done.stdout + done.stderr


def test_the_manifest_lists_every_file_and_goes_last(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    files = sample_files()
    write_files(tmp_path / "results", files)

    kit.run("run.sh", "true", timeout=60)

    prefix, objects = saved(store)
    manifest = json.loads(objects["MANIFEST.json"])
    assert manifest["files"] == manifest_lines(files)
    assert (manifest["count"], manifest["total_size"]) == (4, sum(map(len, files.values())))
    assert manifest["destination"] == f"s3://{store.bucket}/{prefix}"
    assert read_manifest(tmp_path / "results") == manifest
    writes = [s for s in store.proxy.seen if s.method in ("PUT", "POST")]
    assert writes[-1].key.endswith("/MANIFEST.json")
    # the checkpoint went in three parts, each signed and checked by the store
    parts = [s for s in writes if s.key.endswith("model.pt") and "partNumber" in s.query]
    assert len(parts) == 3
    # then every object was read back: the manifest downloaded, every file's HEAD
    after = store.proxy.seen[store.proxy.seen.index(writes[-1]) + 1 :]
    assert [s.method for s in after].count("GET") == 1
    assert sorted(s.key.removeprefix(prefix) for s in after if s.method == "HEAD") == sorted(files)


def test_without_the_stores_checksum_the_etags_are_checked(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    """A store that keeps no SHA-256 (S3_CHECKSUM=off sends none): size and ETag — the MD5,
    and for the multipart checkpoint the MD5 of its parts' MD5s and "-3"."""
    files = sample_files()
    write_files(tmp_path / "results", files)

    done = kit.run("run.sh", "true", S3_CHECKSUM="off", timeout=60)

    assert done.returncode == 0
    _, objects = saved(store)
    assert {k: v for k, v in objects.items() if k != "MANIFEST.json"} == files
    assert "results safe: 4 files" in kit.alerts()[0]
    assert "(ETags)" in done.stderr
    assert len(kit.deletes()) == 1


def test_a_second_save_of_the_same_run_uploads_only_the_manifest(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    """idle-watch tries again at every check: what the store already holds, verified, is not
    sent twice."""
    write_files(tmp_path / "results", sample_files())

    done = kit.source(
        'kit_save_results 0; echo "1: $KIT_SAVE_NOTE"; kit_save_results 0; echo "2: $KIT_SAVE_NOTE"'
    )

    first, second = done.stdout.splitlines()
    assert first.startswith("1: results safe: 4 files") and first.endswith("verified")
    assert second == "2" + first[1:]
    puts = store.proxy.keys("PUT")
    manifest_puts = [k for k in puts if k.endswith("MANIFEST.json")]
    assert len(manifest_puts) == 2
    assert done.stderr.count("already in the store") == 4


def test_short_lived_credentials_work_and_are_never_printed(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    """docs/kit.md's recipe: a temporary key with its session token (moto checks the token)."""
    write_files(tmp_path / "results", {"a.txt": b"a"})
    temporary = store.moto.temporary()

    done = kit.run("run.sh", "true", **temporary)

    assert done.returncode == 0, done.stderr
    assert "results safe: 1 file, 1 B, s3://" in kit.alerts()[0]
    printed = done.stdout + done.stderr + "".join(kit.alerts())
    assert temporary["AWS_SECRET_ACCESS_KEY"] not in printed
    assert temporary["AWS_SESSION_TOKEN"] not in printed


def test_dry_run_says_the_whole_sequence_and_uploads_nothing(
    kit: Kit, store: Store, tmp_path: Path
) -> None:
    write_files(tmp_path / "results", sample_files())

    done = kit.run("run.sh", "true", DRY_RUN="1")

    assert done.returncode == 0
    assert store.objects() == {}
    assert store.proxy.seen == []
    assert not (tmp_path / "results" / "MANIFEST.json").exists()
    for line in (
        "dry run: would write MANIFEST.json",
        "dry run: would upload checkpoints/model.pt (11.5 MB, 3 parts) to s3://",
        "dry run: would upload my results/résumé 中文 (final).txt (13 B)",
        "dry run: would upload MANIFEST.json last",
        "dry run: would destroy RunPod pod pod-1 (DELETE with RUNPOD_API_KEY)",
    ):
        assert line in done.stderr
    [alert] = kit.alerts()
    assert "dry run: would save 4 files, 11.5 MB, s3://" in alert
    assert "DRY_RUN=1: not destroying this instance" in alert
    assert kit.deletes() == []

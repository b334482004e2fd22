"""RESULTS_URL=git: RESULTS_DIR is committed in its repository and pushed, and the push is
verified by reading the branch back from the remote (a bare repository here) before any
destroy; a push refused, a remote that loses the commit, or no remote at all keeps the
instance."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit_fakes.harness import POD_KEY, Kit
from tests.kit_fakes.results import manifest_lines, sample_files, write_files

IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *IDENTITY, *args], cwd=cwd, capture_output=True, check=True, timeout=30
    )
    return done.stdout.decode()


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path]:
    """(bare remote, working clone with one pushed commit and its upstream set)."""
    bare, work = tmp_path / "remote.git", tmp_path / "work"
    git("init", "-q", "--bare", "-b", "main", str(bare), cwd=tmp_path)
    git("clone", "-q", str(bare), str(work), cwd=tmp_path)
    (work / "train.py").write_text("print('train')\n")
    git("checkout", "-q", "-b", "main", cwd=work)
    git("add", "train.py", cwd=work)
    git("commit", "-q", "-m", "code", cwd=work)
    git("push", "-q", "-u", "origin", "main", cwd=work)
    (work / "results").mkdir()
    return bare, work


@pytest.fixture
def kit(tmp_path: Path, repos: tuple[Path, Path]) -> Iterator[Kit]:
    _, work = repos
    (tmp_path / "kit").mkdir()
    with Kit.start(tmp_path / "kit") as k:
        k.env |= {"RUNPOD_POD_ID": "pod-1", "RUNPOD_API_KEY": POD_KEY}
        k.env |= {"RESULTS_DIR": str(work / "results"), "RESULTS_URL": "git"}
        k.env["RESULTS_RETRY_DELAY"] = "0.05"
        k.add_pod("pod-1")
        yield k


def remote_file(bare: Path, path: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(bare), "show", f"main:{path}"], capture_output=True, check=True
    ).stdout


def test_results_are_committed_pushed_and_read_back_before_the_destroy(
    kit: Kit, repos: tuple[Path, Path]
) -> None:
    bare, work = repos
    files = sample_files()
    write_files(work / "results", files)
    (work / "train.py").write_text("print('edited, not a result')\n")

    done = kit.run("run.sh", "true", timeout=60)

    assert done.returncode == 0, done.stderr
    for rel, data in files.items():
        assert remote_file(bare, f"results/{rel}") == data
    head = git("rev-parse", "HEAD", cwd=work).strip()
    assert git("--git-dir", str(bare), "rev-parse", "main", cwd=work).strip() == head
    manifest = remote_file(bare, "results/MANIFEST.json")
    assert manifest == (work / "results" / "MANIFEST.json").read_bytes()
    assert b'"destination": "git origin main"' in manifest
    assert json.loads(manifest)["files"] == manifest_lines(files)
    # only the results were committed: the edited code stays uncommitted
    assert remote_file(bare, "train.py") == b"print('train')\n"
    assert git("log", "-1", "--format=%s", cwd=work).startswith("results: runpod-pod-1 ")
    [alert] = kit.notifies()
    assert alert.title == "runpod-pod-1: job done, results saved, destroying"
    assert alert.body == (
        "run.sh: job exited with status 0; results safe: 4 files, 11.5 MB, "
        f"git origin main@{head[:12]} verified; destroying this instance"
    )
    assert len(kit.deletes()) == 1


def kept(kit: Kit) -> str:
    done = kit.run("run.sh", "bash", "-c", "exit 5", timeout=60)

    assert done.returncode == 5, done.stderr
    assert kit.deletes() == []
    assert kit.events()[-2:] == ["notify", "ping:5"]
    assert Path(kit.env["KEEP_FILE"]).exists()
    [alert] = kit.alerts()
    assert alert.startswith("runpod-pod-1: job FAILED (exit 5), results NOT safe, instance KEPT")
    assert "results NOT safe: " in alert
    return alert


def hook(bare: Path, name: str, body: str) -> None:
    path = bare / "hooks" / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_a_push_the_remote_refuses(kit: Kit, repos: tuple[Path, Path]) -> None:
    bare, work = repos
    write_files(work / "results", {"metrics.json": b"{}"})
    hook(bare, "pre-receive", "echo 'results are too big' >&2\nexit 1\n")

    alert = kept(kit)

    assert "git push failed" in alert


def test_a_remote_that_loses_the_pushed_commit(kit: Kit, repos: tuple[Path, Path]) -> None:
    """It says yes to the push, then its branch points elsewhere: ls-remote shows it."""
    bare, work = repos
    write_files(work / "results", {"metrics.json": b"{}"})
    before = git("rev-parse", "HEAD", cwd=work).strip()
    hook(bare, "post-receive", f"git update-ref refs/heads/main {before}\n")

    alert = kept(kit)

    assert f"the remote's refs/heads/main is {before[:12]}, not the pushed " in alert


def test_an_unreachable_remote_never_shows_its_credentials(
    kit: Kit, repos: tuple[Path, Path]
) -> None:
    _, work = repos
    write_files(work / "results", {"metrics.json": b"{}"})
    url = "http://kit-user:tok-git-secret-99@127.0.0.1:9/results.git"
    git("remote", "set-url", "origin", url, cwd=work)

    alert = kept(kit)

    assert "git push failed" in alert
    assert "tok-git-secret-99" not in alert


def test_a_detached_head_has_no_branch_to_push(kit: Kit, repos: tuple[Path, Path]) -> None:
    _, work = repos
    git("checkout", "-q", "--detach", cwd=work)

    alert = kept(kit)

    assert "not on a branch (detached HEAD)" in alert


def test_a_results_dir_outside_any_repository(kit: Kit, tmp_path: Path) -> None:
    (tmp_path / "loose").mkdir()
    kit.env["RESULTS_DIR"] = str(tmp_path / "loose")

    alert = kept(kit)

    assert "is not in a git repository (RESULTS_URL=git)" in alert


def test_dry_run_says_the_whole_sequence_and_commits_nothing(
    kit: Kit, repos: tuple[Path, Path]
) -> None:
    bare, work = repos
    write_files(work / "results", sample_files())
    before = git("--git-dir", str(bare), "rev-parse", "main", cwd=work).strip()

    done = kit.run("run.sh", "true", DRY_RUN="1", timeout=60)

    assert done.returncode == 0, done.stderr
    assert git("--git-dir", str(bare), "rev-parse", "main", cwd=work).strip() == before
    assert git("rev-parse", "HEAD", cwd=work).strip() == before
    assert git("status", "--porcelain", cwd=work).strip() == "?? results/"
    assert not (work / "results" / "MANIFEST.json").exists()
    for line in (
        "dry run: would write MANIFEST.json",
        "dry run: would commit results in ",
        "and push it to git origin main",
        "dry run: would read the branch back from the remote (ls-remote, fetch) and compare",
    ):
        assert line in done.stderr, line
    [alert] = kit.alerts()
    assert "dry run: would save 4 files, 11.5 MB, git origin main" in alert
    assert "DRY_RUN=1: not destroying this instance" in alert
    assert kit.deletes() == []

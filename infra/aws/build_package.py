"""Build the Lambda package: one zip for python3.12 on arm64 (Graviton).

    python infra/aws/build_package.py [--out build/lambda]     (or REAPER_BUILD_DIR=...)

serverless.yml runs this before it packages (infra/aws/reaper-plugin.js) and deploys the zip
as every function's artifact, so `serverless package` and `serverless deploy` need no Docker and
`serverless package` no AWS credentials (a serverless-built layer would query the deployed stack
while packaging). The zip holds, at its root:

- the runtime dependencies of `infra/aws/requirements-lambda.txt` — wheels for
  `manylinux2014_aarch64` / CPython 3.12 fetched by pip with `--only-binary=:all:` (nothing is
  compiled here, so this machine's architecture does not matter); not uvicorn, not boto3 (the
  Lambda runtime has it). They are fetched once into `build/lambda-deps/<digest>/` and reused
  until the pins change, so later builds work offline (and builds running at the same time
  share the cache safely: each fetches into its own directory and renames it into place);
- `reaper/` and `handlers/` (the emulators are not part of `reaper/`).

When a CPython 3.12 is found, everything is byte-compiled for it (unchecked-hash .pyc: the
sources ship beside them and never change in place). Lambda's code directory is read-only, so
without them every cold start compiles pydantic anew: about a second measured here.

The zip is deterministic: sorted entries, fixed timestamps and modes, so an unchanged tree gives
the same file and CloudFormation sees no change.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
REQUIREMENTS = HERE / "requirements-lambda.txt"
DEFAULT_OUT = ROOT / "build" / "lambda"
DEPS_CACHE = ROOT / "build" / "lambda-deps"
ZIP_NAME = "reaper.zip"
# The code that runs on Lambda (the emulators live outside `reaper/`, in their own package).
SOURCES = ("reaper", "handlers")
# Modules the functions never import: left without bytecode, which would only add size.
NEVER_IMPORTED = r"[/\\](pydantic[/\\]v1|annotated_types[/\\]test_cases)[/\\.]"
PIP_TARGET = [
    "--platform",
    "manylinux2014_aarch64",
    "--implementation",
    "cp",
    "--python-version",
    "3.12",
    "--abi",
    "cp312",
    "--only-binary=:all:",
]
FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def deps_digest() -> str:
    """What the dependency tree depends on: the pins and this script (its pip flags)."""
    sha = hashlib.sha256(REQUIREMENTS.read_bytes())
    sha.update(Path(__file__).read_bytes())
    return sha.hexdigest()


def python312() -> str | None:
    """A CPython 3.12 to byte-compile with, if this machine has one (REAPER_PYTHON312, then
    python3.12 on PATH, then pyenv's)."""
    candidates = [os.environ.get("REAPER_PYTHON312", ""), shutil.which("python3.12") or ""]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    for candidate in filter(None, candidates):
        probe = subprocess.run(  # noqa: S603 (an argv list, no shell)
            [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.stdout.strip() == "True":
            return candidate
    return None


def compile_for_312(tree: Path, interpreter: str | None) -> bool:
    if interpreter is None:
        return False
    command = [interpreter, "-m", "compileall", "-q", "-j", "0", "-x", NEVER_IMPORTED]
    command += ["--invalidation-mode", "unchecked-hash", str(tree)]
    subprocess.run(command, check=True)  # noqa: S603 (an argv list, no shell)
    return True


def fetch_deps(interpreter: str | None) -> Path:
    """The dependency tree for the current pins, fetched once per digest."""
    deps = DEPS_CACHE / deps_digest()[:16]
    if deps.is_dir():
        return deps
    DEPS_CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=DEPS_CACHE))
    try:
        command = [sys.executable, "-m", "pip", "install", "--quiet"]
        command += ["--disable-pip-version-check", "--no-compile", "--target", str(staging)]
        command += [*PIP_TARGET, "-r", str(REQUIREMENTS)]
        if subprocess.run(command, check=False).returncode != 0:  # noqa: S603 (argv list)
            raise SystemExit(
                "build_package: pip could not fetch the arm64 wheels; the first build needs "
                "the package index, later ones reuse build/lambda-deps"
            )
        shutil.rmtree(staging / "bin", ignore_errors=True)  # console scripts: never run here
        compile_for_312(staging, interpreter)
        try:
            staging.rename(deps)
        except OSError:
            if not deps.is_dir():  # not another build finishing first: a real failure
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return deps


def copy_sources(code: Path, interpreter: str | None) -> None:
    shutil.rmtree(code, ignore_errors=True)
    for name in SOURCES:
        shutil.copytree(
            ROOT / name,
            code / name,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
    compile_for_312(code, interpreter)


def files(tree: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(tree.rglob("*")):
        if path.is_file():
            yield path.relative_to(tree).as_posix(), path


def write_zip(target: Path, trees: list[Path]) -> None:
    entries = sorted(entry for tree in trees for entry in files(tree))
    handle, name = tempfile.mkstemp(prefix=".zip-", dir=target.parent)
    os.close(handle)
    staging = Path(name)
    with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, path in entries:
            info = zipfile.ZipInfo(name, FIXED_TIME)
            info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    staging.chmod(0o644)
    staging.replace(target)


def build(out: Path) -> Path:
    """Build `out/reaper.zip` and return its path."""
    out.mkdir(parents=True, exist_ok=True)
    interpreter = python312()
    deps = fetch_deps(interpreter)
    copy_sources(out / "code", interpreter)
    target = out / ZIP_NAME
    write_zip(target, [deps, out / "code"])
    note = "byte-compiled for 3.12" if interpreter else "no python3.12 here: not byte-compiled"
    print(f"build_package: {target} ({note})", file=sys.stderr)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    default = Path(os.environ.get("REAPER_BUILD_DIR") or DEFAULT_OUT)
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    build(args.out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())

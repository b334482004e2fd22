#!/usr/bin/env python3
"""results.py — make RESULTS_DIR safe before the instance goes: manifest, upload, verify.

    results.py save <results dir> <results url> <run prefix> [--dry-run]

Run by common.sh (kit_save_results); python3's standard library only, because a stock GPU
image has python3 but usually neither the aws CLI nor boto3.

  1. MANIFEST.json is written at the top of the results dir: every file's relative path, size
     and sha256 (.git directories and the manifest itself are not results).
  2. s3://bucket/prefix: every file goes to <prefix>/<run prefix>/<path> on any S3-compatible
     store (S3_ENDPOINT_URL; AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
     AWS_REGION / AWS_DEFAULT_REGION), signed with AWS Signature V4; a file larger than
     RESULTS_PART_MB (64) MiB goes in parts; every request is retried with backoff. Each upload
     carries its SHA-256 and MD5 so that the store refuses a body that differs. The manifest
     goes last.
     git: the results dir is committed in its repository and pushed to the branch's remote.
  3. Verification reads back what the store holds. S3: HEAD of every object (its size, and
     the store's SHA-256 checksum where it keeps one, else its ETag: the MD5 of a single-part
     object, the MD5 of the parts' MD5s and "-N" for N parts), and the manifest downloaded
     again and compared. git: the remote's branch must name the pushed commit (ls-remote, then
     fetched back and its tree compared), and that commit must hold every file with the
     manifest's bytes. Every file is checked again on disk at the end: one that changed while
     it was saved is not safe.

Prints one line on stdout: "results safe: ..." (exit 0) or "results NOT safe: ..." (exit 1);
the steps go to stderr. No key, signature or credential-bearing URL is ever printed.

Test hook: RESULTS_RETRY_DELAY (seconds, default 1) is the first backoff delay.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import signal
import ssl
import stat
import subprocess
import sys
import time
import urllib.parse
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

MANIFEST = "MANIFEST.json"
PARTIAL = ".MANIFEST.json.partial"
FORMAT = "reaper-kit-manifest/1"
MIB = 1024 * 1024
MAX_PARTS = 10000
READ_CHUNK = MIB
HTTP_TIMEOUT = 60
RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}
RETRYABLE_CODES = {"RequestTimeout", "SlowDown", "InternalError", "ServiceUnavailable"}
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


class Unsafe(Exception):
    """The results are not safe: the message says why (one line)."""


class StoreError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(
            f"HTTP {status}{' ' + code if code else ''}{': ' + message if message else ''}"
        )
        self.status = status
        self.code = code


def log(text: str) -> None:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    sys.stderr.write(f"{stamp} [results] {text}\n")
    sys.stderr.flush()


def shown(name: str) -> str:
    """A file name as one printable line: undecodable bytes and control characters escaped."""
    raw = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in raw)


def human(size: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


def files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def names(items: list[str], limit: int = 5) -> str:
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def quote(text: str, safe: str) -> str:
    return urllib.parse.quote(text, safe=safe)


def b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


def env_int(name: str, default: int, low: int, high: int) -> int:
    value = os.environ.get(name, "")
    if re.fullmatch(r"[0-9]{1,6}", value) and low <= int(value) <= high:
        return int(value)
    if value:
        log(f"{name}='{value[:40]}' is not a whole number from {low} to {high}; using {default}")
    return default


# -- the files ------------------------------------------------------------------------------


class Part:
    __slots__ = ("length", "md5", "number", "offset", "sha256")

    def __init__(self, number: int, offset: int, length: int, sha256: bytes, md5: bytes) -> None:
        self.number, self.offset, self.length = number, offset, length
        self.sha256, self.md5 = sha256, md5


class Entry:
    def __init__(self, path: str, full: str, size: int, mtime_ns: int) -> None:
        self.path, self.full, self.size, self.mtime_ns = path, full, size, mtime_ns
        self.sha256 = b""
        self.md5 = b""
        self.parts: list[Part] = []
        self.blob = ""

    def line(self) -> dict[str, object]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256.hex()}

    def expected_checksums(self) -> set[str]:
        """The store's x-amz-checksum-sha256 for this object: of the whole, or composite."""
        found = {b64(self.sha256)}
        if len(self.parts) > 1:
            composite = hashlib.sha256(b"".join(p.sha256 for p in self.parts)).digest()
            # S3 answers "<base64>-<parts>"; some stores leave the part count out
            found |= {b64(composite), f"{b64(composite)}-{len(self.parts)}"}
        return found

    def expected_etag(self) -> str:
        if len(self.parts) > 1:
            joined = hashlib.md5(b"".join(p.md5 for p in self.parts)).hexdigest()  # noqa: S324
            return f"{joined}-{len(self.parts)}"
        return self.md5.hex()


def list_files(root: str) -> tuple[list[Entry], list[str]]:
    """Every regular file under root (symlinks followed, each directory once), sorted; and
    the problems that make the listing incomplete."""
    entries: list[Entry] = []
    problems: list[str] = []
    seen: set[tuple[int, int]] = set()

    def unreadable(error: OSError) -> None:
        problems.append(f"cannot read {shown(error.filename or '?')}: {error.strerror}")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=True):
        try:
            st = os.stat(dirpath)
        except OSError as error:
            unreadable(error)
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if rel in (MANIFEST, PARTIAL):
                continue
            try:
                fst = os.stat(full)
            except FileNotFoundError:
                log(f"skipping {shown(rel)}: a link to nothing")
                continue
            except OSError as error:
                unreadable(error)
                continue
            if not stat.S_ISREG(fst.st_mode):
                log(f"skipping {shown(rel)}: not a regular file")
                continue
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                problems.append(f"{shown(rel)}: its name is not UTF-8")
                continue
            entries.append(Entry(rel, full, fst.st_size, fst.st_mtime_ns))
    entries.sort(key=lambda e: e.path)
    return entries, problems


def part_size_for(size: int, part_size: int) -> int:
    if size > part_size * MAX_PARTS:
        part_size = -(-size // (MAX_PARTS * MIB)) * MIB
    return part_size


def hash_file(entry: Entry, part_size: int, blob_algo: str | None) -> None:
    """sha256 and md5 of the whole file and of each part; the git blob id in git mode."""
    whole_sha, whole_md5 = hashlib.sha256(), hashlib.md5()  # noqa: S324
    blob = hashlib.new(blob_algo) if blob_algo else None
    if blob is not None:
        blob.update(b"blob %d\0" % entry.size)
    size = part_size_for(entry.size, part_size)
    parts: list[Part] = []
    offset = 0
    with open(entry.full, "rb") as f:
        while True:
            part_sha, part_md5 = hashlib.sha256(), hashlib.md5()  # noqa: S324
            got = 0
            while got < size:
                chunk = f.read(min(READ_CHUNK, size - got))
                if not chunk:
                    break
                got += len(chunk)
                for h in (whole_sha, whole_md5, part_sha, part_md5):
                    h.update(chunk)
                if blob is not None:
                    blob.update(chunk)
            if got == 0 and parts:
                break
            parts.append(Part(len(parts) + 1, offset, got, part_sha.digest(), part_md5.digest()))
            offset += got
            if got < size:
                break
    entry.sha256, entry.md5 = whole_sha.digest(), whole_md5.digest()
    entry.parts = parts
    entry.blob = blob.hexdigest() if blob is not None else ""
    if offset != entry.size or os.stat(entry.full).st_mtime_ns != entry.mtime_ns:
        raise Unsafe(f"{shown(entry.path)} changed while it was read: still being written?")


def changed_since(root: str, entries: list[Entry]) -> list[str]:
    """What differs on disk from the manifest now: changed, gone or new files."""
    now, problems = list_files(root)
    before = {e.path: e for e in entries}
    after = {e.path: e for e in now}
    out = list(problems)
    for path, e in before.items():
        n = after.get(path)
        if n is None:
            out.append(f"{shown(path)} (gone)")
        elif (n.size, n.mtime_ns) != (e.size, e.mtime_ns):
            out.append(f"{shown(path)} (changed: {human(e.size)} then {human(n.size)})")
    out += [f"{shown(p)} (new)" for p in sorted(set(after) - set(before))]
    return out


def manifest_bytes(entries: list[Entry], host: str, where: str) -> bytes:
    document = {
        "format": FORMAT,
        "host": host,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "destination": where,
        "count": len(entries),
        "total_size": sum(e.size for e in entries),
        "files": [e.line() for e in entries],
    }
    return (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def check_old_manifest(root: str) -> None:
    path = os.path.join(root, MANIFEST)
    if not os.path.lexists(path):
        return
    try:
        with open(path, "rb") as f:
            ours = json.loads(f.read(10 * MIB)).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise Unsafe(f"{MANIFEST} in the results dir is not the kit's manifest: rename it")


def write_manifest(root: str, data: bytes) -> None:
    """Write MANIFEST.json through a temporary file, synced: a full disk is an error here."""
    partial = os.path.join(root, PARTIAL)
    try:
        with open(partial, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, os.path.join(root, MANIFEST))
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise Unsafe(f"cannot write {MANIFEST}: {error.strerror or error}") from None


# -- S3 -------------------------------------------------------------------------------------


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def error(self) -> StoreError:
        code = message = ""
        if self.body:
            try:
                root = ET.fromstring(self.body)  # noqa: S314  (the store's own answer)
                code = root.findtext("Code") or ""
                message = root.findtext("Message") or ""
            except ET.ParseError:
                pass
        return StoreError(self.status, code, message[:200])


class S3:
    def __init__(self, url: str) -> None:
        match = re.fullmatch(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/.*)?", url)
        if not match:
            raise Unsafe("RESULTS_URL is not s3://bucket/prefix (bucket: 3-63 of a-z 0-9 . -)")
        self.bucket = match.group(1)
        self.prefix = (match.group(2) or "").strip("/")
        self.key_id = os.environ.get("AWS_ACCESS_KEY_ID", "")
        self.secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
        self.token = os.environ.get("AWS_SESSION_TOKEN", "")
        if not self.key_id or not self.secret:
            raise Unsafe("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set")
        self.region = (
            os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        )
        self.checksum = os.environ.get("S3_CHECKSUM", "sha256").lower() != "off"
        self.retries = env_int("RESULTS_RETRIES", 5, 0, 20)
        self.delay = env_float("RESULTS_RETRY_DELAY", 1.0)
        endpoint = os.environ.get("S3_ENDPOINT_URL", "")
        if endpoint:
            parts = urllib.parse.urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise Unsafe("S3_ENDPOINT_URL is not an http(s) URL")
            self.scheme, self.hostname, self.port = parts.scheme, parts.hostname, parts.port
            self.base = parts.path.rstrip("/") + "/" + self.bucket
        else:
            self.scheme, self.port = "https", None
            if "." in self.bucket:
                self.hostname, self.base = f"s3.{self.region}.amazonaws.com", "/" + self.bucket
            else:
                self.hostname, self.base = f"{self.bucket}.s3.{self.region}.amazonaws.com", ""
        default_port = 443 if self.scheme == "https" else 80
        self.host_header = self.hostname
        if self.port and self.port != default_port:
            self.host_header = f"{self.hostname}:{self.port}"
        self.connection: http.client.HTTPConnection | None = None

    def key(self, *segments: str) -> str:
        return "/".join(s.strip("/") for s in (self.prefix, *segments) if s.strip("/"))

    def where(self, run: str) -> str:
        return f"s3://{self.bucket}/{self.key(run)}/"

    # ---- one signed request ----
    def _connect(self) -> http.client.HTTPConnection:
        if self.connection is None:
            if self.scheme == "https":
                self.connection = http.client.HTTPSConnection(
                    self.hostname,
                    self.port,
                    timeout=HTTP_TIMEOUT,
                    context=ssl.create_default_context(),
                )
            else:
                self.connection = http.client.HTTPConnection(
                    self.hostname, self.port, timeout=HTTP_TIMEOUT
                )
        return self.connection

    def _close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def sign(
        self,
        method: str,
        uri: str,
        query: list[tuple[str, str]],
        headers: dict[str, str],
        payload_sha256: str,
    ) -> None:
        now = datetime.now(timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        headers["host"] = self.host_header
        headers["x-amz-date"] = amz_date
        headers["x-amz-content-sha256"] = payload_sha256
        if self.token:
            headers["x-amz-security-token"] = self.token
        signed = sorted(k for k in headers if k != "content-length")
        canonical_query = "&".join(f"{quote(k, '~')}={quote(v, '~')}" for k, v in sorted(query))
        canonical_headers = "".join(f"{k}:{' '.join(headers[k].split())}\n" for k in signed)
        request = "\n".join(
            [method, uri, canonical_query, canonical_headers, ";".join(signed), payload_sha256]
        )
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(request.encode()).hexdigest()]
        )
        key = ("AWS4" + self.secret).encode()
        for step in (day, self.region, "s3", "aws4_request"):
            key = hmac.new(key, step.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self.key_id}/{scope}, "
            f"SignedHeaders={';'.join(signed)}, Signature={signature}"
        )

    def request(
        self,
        method: str,
        key: str,
        query: list[tuple[str, str]] | None = None,
        headers: dict[str, str] | None = None,
        body: bytes = b"",
        ok: tuple[int, ...] = (200,),
    ) -> Response:
        """One request, retried with backoff on a network error, 408/429/5xx or a store that
        asks to slow down. Raises StoreError for an answer not in `ok`."""
        query = query or []
        uri = quote(f"{self.base}/{key}", "/~")
        pairs = [quote(k, "~") + (f"={quote(v, '~')}" if v else "") for k, v in query]
        target = uri + ("?" + "&".join(pairs) if pairs else "")
        payload = hashlib.sha256(body).hexdigest()
        attempt = 0
        while True:
            sent = dict(headers or {})
            sent["content-length"] = str(len(body))
            self.sign(method, uri, query, sent, payload)
            failure: Exception
            try:
                connection = self._connect()
                connection.request(method, target, body=body or None, headers=sent)
                answer = connection.getresponse()
                data = answer.read()
                got = Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, data)
                if got.status in ok:
                    if not (method == "POST" and b"<Error>" in data[:1000]):
                        return got
                    got = Response(500, got.headers, data)  # CompleteMultipartUpload's 200
                error = got.error()
                failure, retry = (
                    error,
                    (got.status in RETRYABLE_STATUS or error.code in RETRYABLE_CODES),
                )
                if got.headers.get("connection", "").lower() == "close":
                    self._close()
            except (OSError, http.client.HTTPException) as error:
                self._close()
                failure, retry = error, True
            if not retry or attempt >= self.retries:
                if isinstance(failure, StoreError):
                    raise failure
                raise StoreError(0, "", f"no answer from the store ({failure})")
            wait = min(30.0, self.delay * 2**attempt) * random.uniform(0.5, 1.0)
            attempt += 1
            log(f"{method} {shown(key) or '/'}: {failure}; retry {attempt} in {wait:.1f}s")
            time.sleep(wait)

    # ---- objects ----
    def head(self, key: str) -> Response | None:
        """The object's metadata with its checksum; None when the store has no such object."""
        headers = {"x-amz-checksum-mode": "ENABLED"}
        got = self.request("HEAD", key, headers=headers, ok=(200, 404))
        return None if got.status == 404 else got

    def upload(self, key: str, entry: Entry) -> None:
        with open(entry.full, "rb") as f:
            if len(entry.parts) <= 1:
                body = f.read(entry.size + 1)
                self._check_body(entry, body, entry.sha256)
                headers = {
                    "content-md5": b64(entry.md5),
                    "content-type": "application/octet-stream",
                }
                if self.checksum:
                    headers["x-amz-checksum-sha256"] = b64(entry.sha256)
                    headers["x-amz-sdk-checksum-algorithm"] = "SHA256"
                self.request("PUT", key, headers=headers, body=body)
                return
            start = {"content-type": "application/octet-stream"}
            if self.checksum:
                start["x-amz-checksum-algorithm"] = "SHA256"
            got = self.request("POST", key, [("uploads", "")], headers=start)
            upload_id = (ET.fromstring(got.body).findtext(f"{S3_NS}UploadId") or "").strip()  # noqa: S314
            if not upload_id:
                raise StoreError(got.status, "", "no UploadId in the store's answer")
            try:
                done = []
                for part in entry.parts:
                    f.seek(part.offset)
                    body = f.read(part.length)
                    self._check_body(entry, body, part.sha256)
                    headers = {"content-md5": b64(part.md5)}
                    if self.checksum:
                        headers["x-amz-checksum-sha256"] = b64(part.sha256)
                        headers["x-amz-sdk-checksum-algorithm"] = "SHA256"
                    query = [("partNumber", str(part.number)), ("uploadId", upload_id)]
                    answer = self.request("PUT", key, query, headers=headers, body=body)
                    done.append((part, answer.headers.get("etag", "")))
                xml = ['<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">']
                for part, etag in done:
                    xml.append(f"<Part><PartNumber>{part.number}</PartNumber><ETag>{etag}</ETag>")
                    if self.checksum:
                        xml.append(f"<ChecksumSHA256>{b64(part.sha256)}</ChecksumSHA256>")
                    xml.append("</Part>")
                xml.append("</CompleteMultipartUpload>")
                self.request("POST", key, [("uploadId", upload_id)], body="".join(xml).encode())
            except BaseException:
                self.abort(key, upload_id)
                raise

    def abort(self, key: str, upload_id: str) -> None:
        saved, self.retries = self.retries, 0
        try:
            self.request("DELETE", key, [("uploadId", upload_id)], ok=(200, 204, 404))
        except (StoreError, OSError):
            log(f"could not abort the unfinished upload of {shown(key)}")
        finally:
            self.retries = saved

    @staticmethod
    def _check_body(entry: Entry, body: bytes, sha256: bytes) -> None:
        if hashlib.sha256(body).digest() != sha256:
            raise Unsafe(f"{shown(entry.path)} changed while it was uploaded")

    def check(self, entry: Entry, key: str) -> str:
        """Why the store's object does not match the entry; empty when it does."""
        try:
            got = self.head(key)
        except StoreError as error:
            return f"the store answered {error}"
        if got is None:
            return "missing in the store"
        size = got.headers.get("content-length", "")
        if size != str(entry.size):
            return f"{size or '?'} bytes in the store, {entry.size} here"
        checksum = got.headers.get("x-amz-checksum-sha256", "")
        if checksum:
            return "" if checksum in entry.expected_checksums() else "SHA-256 differs in the store"
        etag = got.headers.get("etag", "").strip('"')
        return "" if etag == entry.expected_etag() else "ETag differs in the store"


def save_s3(root: str, url: str, run: str, host: str, dry_run: bool) -> str:
    store = S3(url)
    where = store.where(run)
    part_size = env_int("RESULTS_PART_MB", 64, 5, 5120) * MIB
    entries, problems = list_files(root)
    if problems:
        raise Unsafe(names(problems))
    total = sum(e.size for e in entries)
    counted = f"{files(len(entries))}, {human(total)}"
    summary = f"{counted}, {where}"
    if dry_run:
        log(f"dry run: would write {MANIFEST} in {shown(root)} ({counted})")
        for e in entries:
            parts = -(-e.size // part_size_for(e.size, part_size)) if e.size else 1
            how = f", {parts} parts" if parts > 1 else ""
            name = shown(e.path)
            log(f"dry run: would upload {name} ({human(e.size)}{how}) to {where}{name}")
        log(
            f"dry run: would upload {MANIFEST} last, then read every object back "
            f"({'SHA-256 checksum' if store.checksum else 'ETag'} and size) and the manifest"
        )
        return f"dry run: would save {summary} and verify"
    check_old_manifest(root)
    for e in entries:
        hash_file(e, part_size, None)
    data = manifest_bytes(entries, host, where)
    write_manifest(root, data)
    log(f"saving {summary} ({'SHA-256 checksums' if store.checksum else 'ETags'})")
    for e in entries:
        key = store.key(run, e.path)
        if store.check(e, key) == "":
            log(f"{shown(e.path)}: already in the store")
            continue
        parts = f"{len(e.parts)} parts" if len(e.parts) > 1 else "1 part"
        log(f"uploading {shown(e.path)} ({human(e.size)}, {parts})")
        store.upload(key, e)
    changed = changed_since(root, entries)
    if changed:
        raise Unsafe(f"changed while they were saved: {names(changed)}")
    path = os.path.join(root, MANIFEST)
    manifest = Entry(MANIFEST, path, len(data), os.stat(path).st_mtime_ns)
    hash_file(manifest, part_size, None)
    store.upload(store.key(run, MANIFEST), manifest)
    # verification: what the store holds now
    bad = []
    got = store.request("GET", store.key(run, MANIFEST), ok=(200, 404))
    if got.status == 404:
        bad.append(f"{MANIFEST} (missing in the store)")
    elif got.body != data:
        bad.append(f"{MANIFEST} (differs in the store)")
    for e in entries:
        why = store.check(e, store.key(run, e.path))
        if why:
            bad.append(f"{shown(e.path)} ({why})")
    if bad:
        raise Unsafe(
            f"{len(bad)} of {len(entries) + 1} objects at {where} not verified: {names(bad)}"
        )
    return f"results safe: {summary} verified"


# -- git ------------------------------------------------------------------------------------

_USERINFO = re.compile(r"://[^/@\s]*@")


def redact(text: str) -> str:
    return _USERINFO.sub("://***@", text)


def git(*args: str, cwd: str, check: bool = True) -> str:
    environ = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    environ.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    done = subprocess.run(  # noqa: S603
        ["git", "--literal-pathspecs", *args],  # noqa: S607
        cwd=cwd,
        env=environ,
        capture_output=True,
        timeout=3600,
    )
    out = done.stdout.decode("utf-8", "surrogateescape")
    if check and done.returncode != 0:
        err = redact(done.stderr.decode("utf-8", "replace")).strip().splitlines()
        detail = next((line for line in reversed(err) if line.strip()), f"exit {done.returncode}")
        raise Unsafe(f"git {args[0]} failed: {detail[:200]}")
    return out


def save_git(root: str, run: str, host: str, dry_run: bool) -> str:
    probe = subprocess.run(  # noqa: S603
        ["git", "-C", root, "rev-parse", "--show-toplevel"],  # noqa: S607
        capture_output=True,
    )
    if probe.returncode != 0:
        raise Unsafe(f"{shown(root)} is not in a git repository (RESULTS_URL=git)")
    top = probe.stdout.decode("utf-8", "surrogateescape").strip()
    rel = os.path.relpath(os.path.realpath(root), os.path.realpath(top)).replace(os.sep, "/")
    rel = "" if rel == "." else rel
    branch = git("symbolic-ref", "-q", "--short", "HEAD", cwd=top, check=False).strip()
    if not branch:
        raise Unsafe("the repository is not on a branch (detached HEAD): nothing to push to")
    remote = git("config", f"branch.{branch}.remote", cwd=top, check=False).strip() or "origin"
    ref = git("config", f"branch.{branch}.merge", cwd=top, check=False).strip()
    ref = ref or f"refs/heads/{branch}"
    where = f"git {remote} {ref.replace('refs/heads/', '', 1)}"
    entries, problems = list_files(root)
    if problems:
        raise Unsafe(names(problems))
    total = sum(e.size for e in entries)
    counted = f"{files(len(entries))}, {human(total)}"
    summary = f"{counted}, {where}"
    pathspec = rel or "."
    if dry_run:
        log(f"dry run: would write {MANIFEST} in {shown(root)} ({counted})")
        log(f"dry run: would commit {shown(pathspec)} in {shown(top)} and push it to {where}")
        log("dry run: would read the branch back from the remote (ls-remote, fetch) and compare")
        return f"dry run: would save {summary} and verify"
    check_old_manifest(root)
    algo = git("rev-parse", "--show-object-format", cwd=top, check=False).strip() or "sha1"
    for e in entries:
        hash_file(e, 1 << 62, algo)
    data = manifest_bytes(entries, host, where)
    write_manifest(root, data)
    git("add", "-A", "-f", "--", pathspec, cwd=top)
    staged = subprocess.run(  # noqa: S603
        ["git", "--literal-pathspecs", "diff", "--cached", "--quiet", "--", pathspec],  # noqa: S607
        cwd=top,
    ).returncode
    if staged:
        identity = []
        if not git("config", "user.email", cwd=top, check=False).strip():
            identity = ["-c", "user.name=reaper kit", "-c", f"user.email=kit@{host}"]
        message = f"results: {host} {run.rsplit('/', 1)[-1]}"
        git(*identity, "commit", "-q", "--no-verify", "-m", message, "--", pathspec, cwd=top)
    head = git("rev-parse", "HEAD", cwd=top).strip()
    log(f"pushing {summary} (commit {head[:12]})")
    retries = env_int("RESULTS_RETRIES", 5, 0, 20)
    delay = env_float("RESULTS_RETRY_DELAY", 1.0)
    for attempt in range(retries + 1):
        try:
            git("push", "-q", remote, f"HEAD:{ref}", cwd=top)
            break
        except Unsafe as error:
            final = attempt >= retries or re.search(r"rejected|declined|denied", str(error))
            if final:
                raise
            log(f"{error}; retry {attempt + 1}")
            time.sleep(min(30.0, delay * 2**attempt))
    # verification: what the remote holds now
    listed = git("ls-remote", remote, ref, cwd=top).split()
    if not listed or listed[0] != head:
        there = listed[0][:12] if listed else "missing"
        raise Unsafe(f"the remote's {ref} is {there}, not the pushed {head[:12]}")
    git("fetch", "-q", "--no-tags", remote, ref, cwd=top)
    fetched = git("rev-parse", "FETCH_HEAD", "FETCH_HEAD^{tree}", "HEAD^{tree}", cwd=top).split()
    if fetched[0] != head or fetched[1] != fetched[2]:
        raise Unsafe(f"the commit fetched back from {remote} is not the pushed {head[:12]}")
    tree = {}
    listing = git("ls-tree", "-r", "-z", "--full-tree", head, "--", pathspec, cwd=top)
    for item in filter(None, listing.split("\0")):
        meta, _, path = item.partition("\t")
        tree[path] = meta.split()[2]
    prefix = f"{rel}/" if rel else ""
    manifest_blob = hashlib.new(algo, b"blob %d\0" % len(data) + data).hexdigest()
    bad = (
        []
        if tree.get(prefix + MANIFEST) == manifest_blob
        else [f"{MANIFEST} (not in the commit as written)"]
    )
    for e in entries:
        blob = tree.get(prefix + e.path)
        if blob is None:
            bad.append(f"{shown(e.path)} (not in the pushed commit)")
        elif blob != e.blob:
            bad.append(f"{shown(e.path)} (the pushed commit holds other bytes)")
    changed = changed_since(root, entries)
    bad += [f"{c}" for c in changed]
    if bad:
        raise Unsafe(f"{len(bad)} files not verified in {where}: {names(bad)}")
    return f"results safe: {counted}, {where}@{head[:12]} verified"


# -- main -----------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "save":
        sys.stderr.write(__doc__ or "")
        return 2
    root, url, run = argv[1], argv[2], argv[3]
    dry_run = "--dry-run" in argv[4:]
    host = run.split("/", 1)[0]

    def stop(signum: int, _frame: object) -> None:
        raise Unsafe(f"stopped by signal {signum} (PUSH_TIMEOUT?)")

    signal.signal(signal.SIGTERM, stop)
    try:
        if not os.path.isdir(root):
            raise Unsafe(f"RESULTS_DIR {shown(root)} is not a directory")
        if url == "git":
            line = save_git(root, run, host, dry_run)
        elif url.startswith("s3://"):
            line = save_s3(root, url, run, host, dry_run)
        else:
            raise Unsafe("RESULTS_URL is neither s3://bucket/prefix nor git")
    except Unsafe as error:
        print(f"results NOT safe: {error}")
        return 1
    except StoreError as error:
        print(f"results NOT safe: the store answered {error}")
        return 1
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        print(f"results NOT safe: {shown(str(error))[:300]}")
        return 1
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A real S3 protocol server on loopback for the kit's results tests: moto's server mode in a
child process (its own settings: IAM authentication switched on, so that every request the
kit signs is checked by moto's SigV4 verifier), one IAM user with a key for the kit, and a
small proxy in front of it that can make the store misbehave — drop an object, lie about a
size, refuse a credential, fail now and then — the faults a real store has.

One server serves the whole test session; each test gets its own bucket."""

from __future__ import annotations

import atexit
import http.client
import itertools
import json
import os
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3

from emulators.aws import start_moto_server

REGION = "us-east-1"
_buckets = itertools.count(1)
_ALLOW: dict[str, Any] = {"Effect": "Allow", "Resource": "*", "Principal": {"AWS": "*"}}


@dataclass
class Moto:
    url: str
    key_id: str
    secret: str
    process: subprocess.Popen[bytes]

    def client(self, key_id: str | None = None, secret: str | None = None) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=key_id or self.key_id,
            aws_secret_access_key=secret or self.secret,
            region_name=REGION,
        )

    def temporary(self) -> dict[str, str]:
        """Short-lived credentials from STS (AssumeRole): key id, secret and session token,
        as docs/kit.md's recipe hands to an instance."""
        role = f"kit-writer-{next(_buckets)}"
        iam = boto3.client(
            "iam",
            endpoint_url=self.url,
            aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret,
            region_name=REGION,
        )
        trust = {"Version": "2012-10-17", "Statement": [_ALLOW | {"Action": "sts:AssumeRole"}]}
        made = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))
        arn = made["Role"]["Arn"]
        policy = {"Version": "2012-10-17", "Statement": [_ALLOW | {"Action": "s3:*"}]}
        iam.put_role_policy(RoleName=role, PolicyName="s3", PolicyDocument=json.dumps(policy))
        sts = boto3.client(
            "sts",
            endpoint_url=self.url,
            aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret,
            region_name=REGION,
        )
        got = sts.assume_role(RoleArn=arn, RoleSessionName="instance", DurationSeconds=900)
        creds = got["Credentials"]
        return {
            "AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
            "AWS_SESSION_TOKEN": creds["SessionToken"],
        }

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


_moto: Moto | None = None
_moto_lock = threading.Lock()


def moto() -> Moto:
    """The session's moto server, started on first use (about a second), with IAM
    authentication on from then: a request signed wrong, or with a key moto does not know,
    is refused as S3 would refuse it."""
    global _moto
    with _moto_lock:
        if _moto is None:
            _moto = _start_moto()
            atexit.register(_moto.stop)
        return _moto


def _start_moto() -> Moto:
    server = start_moto_server()
    url, process = server.url, server.process
    iam = boto3.client(
        "iam",
        endpoint_url=url,
        aws_access_key_id="bootstrap",
        aws_secret_access_key="bootstrap",
        region_name=REGION,
    )
    iam.create_user(UserName="kit")
    policy = {"Version": "2012-10-17", "Statement": [_ALLOW | {"Action": "*"}]}
    iam.put_user_policy(UserName="kit", PolicyName="all", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="kit")["AccessKey"]
    # from here on every request is authenticated and its signature checked
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{url}/moto-api/reset-auth",
        data=b"0",
        method="POST",
        headers={"Content-Type": "text/plain"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 (loopback)
        answer.read()
    return Moto(url, key["AccessKeyId"], key["SecretAccessKey"], process)


# -- the proxy ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    method: str
    key: str  # the object key, decoded, without the bucket
    query: str


Rule = Callable[[Seen], "tuple[int, dict[str, str], bytes] | None"]


@dataclass
class StoreProxy:
    """Forwards every request to moto unchanged (the Host header too: the signature covers
    it) unless a rule answers it; logs what it saw."""

    target: str
    bucket: str
    port: int = 0
    seen: list[Seen] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    head_rewrites: dict[str, dict[str, str]] = field(default_factory=dict)
    before_forward: list[Callable[[Seen], None]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ---- faults ----
    def drop(self, key_suffix: str) -> None:
        """The store says yes to the object's upload and keeps nothing."""

        def rule(seen: Seen) -> tuple[int, dict[str, str], bytes] | None:
            if seen.method == "PUT" and seen.key.endswith(key_suffix):
                return 200, {"ETag": '"00000000000000000000000000000000"'}, b""
            return None

        self.rules.append(rule)

    def misreport(self, key_suffix: str, **headers: str) -> None:
        """HEAD of the object answers these headers (content_length="3": a wrong size)."""
        self.head_rewrites[key_suffix] = {k.replace("_", "-"): v for k, v in headers.items()}

    def refuse_all(self, status: int, code: str, message: str) -> None:
        """Every request answered with this S3 error (a HEAD without its body, as S3 does)."""
        body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"
        self.rules.append(lambda _s: (status, {"Content-Type": "application/xml"}, body.encode()))

    def fail_next(self, count: int, status: int = 503, code: str = "SlowDown") -> None:
        left = [count]
        message = "Please reduce your request rate."
        body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"

        def rule(seen: Seen) -> tuple[int, dict[str, str], bytes] | None:
            if left[0] > 0 and seen.method in ("PUT", "POST"):
                left[0] -= 1
                return status, {"Content-Type": "application/xml"}, body.encode()
            return None

        self.rules.append(rule)

    def on_upload(self, key_suffix: str, action: Callable[[str], None]) -> None:
        """Run `action(key)` when the object's upload arrives, before it reaches the store."""

        def hook(seen: Seen) -> None:
            if seen.method == "PUT" and seen.key.endswith(key_suffix):
                action(seen.key)

        self.before_forward.append(hook)

    def slow(self, seconds: float) -> None:
        self.before_forward.append(lambda _s: time.sleep(seconds))

    def keys(self, method: str) -> list[str]:
        return [s.key for s in self.seen if s.method == method]


def _handler(proxy: StoreProxy) -> type[BaseHTTPRequestHandler]:
    where = urlsplit(proxy.target)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path, _, query = self.path.partition("?")
            key = unquote(path).removeprefix(f"/{proxy.bucket}").lstrip("/")
            seen = Seen(self.command, key, query)
            proxy.seen.append(seen)
            for rule in reversed(proxy.rules):
                ruled = rule(seen)
                if ruled is not None:
                    self._reply(*ruled)
                    return
            for hook in proxy.before_forward:
                hook(seen)
            connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
            try:
                headers = {k: v for k, v in self.headers.items()}
                connection.request(self.command, self.path, body=body or None, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                out = {k: v for k, v in answer.getheaders() if k.lower() != "connection"}
            finally:
                connection.close()
            if self.command == "HEAD":
                for suffix, rewrite in proxy.head_rewrites.items():
                    if key.endswith(suffix):
                        out = {k: v for k, v in out.items() if k.lower() not in rewrite}
                        out.update(rewrite)
            self._reply(answer.status, out, data)

        def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            has_length = False
            for name, value in headers.items():
                if name.lower() in ("transfer-encoding", "date", "server"):
                    continue
                has_length |= name.lower() == "content-length"
                self.send_header(name, value)
            if not has_length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@contextmanager
def store_proxy(target: str, bucket: str) -> Iterator[StoreProxy]:
    proxy = StoreProxy(target, bucket)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    server.daemon_threads = True
    proxy.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- one test's store -----------------------------------------------------------------------


@dataclass
class Store:
    """One bucket on the session's moto, reached by the kit through its own proxy."""

    moto: Moto
    bucket: str
    proxy: StoreProxy
    client: Any

    def env(self, prefix: str = "runs") -> dict[str, str]:
        return {
            "RESULTS_URL": f"s3://{self.bucket}/{prefix}",
            "S3_ENDPOINT_URL": self.proxy.url,
            "AWS_ACCESS_KEY_ID": self.moto.key_id,
            "AWS_SECRET_ACCESS_KEY": self.moto.secret,
            "AWS_REGION": REGION,
            "RESULTS_PART_MB": "5",
            "RESULTS_RETRY_DELAY": "0.05",
        }

    def objects(self) -> dict[str, bytes]:
        """Every object in the bucket: key → bytes (read straight from moto)."""
        out: dict[str, bytes] = {}
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
        for page in pages:
            for item in page.get("Contents", []):
                body = self.client.get_object(Bucket=self.bucket, Key=item["Key"])["Body"]
                out[item["Key"]] = body.read()
        return out

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=key)


@contextmanager
def s3_store() -> Iterator[Store]:
    server = moto()
    bucket = f"kit-results-{os.getpid()}-{next(_buckets)}"
    client = server.client()
    client.create_bucket(Bucket=bucket)
    with store_proxy(server.url, bucket) as proxy:
        yield Store(server, bucket, proxy, client)

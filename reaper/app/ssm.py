"""Secrets on AWS: read from SSM Parameter Store at run time, never from the template.

On Lambda the plain environment (visible to anyone who may read the function's configuration,
and written into the CloudFormation template) carries only non-secret settings. The provider
keys, the channels' tokens and URLs (each plugin's `secret_variables`) and the ping and admin
keys live as SecureString parameters under one path, `/reaper/<stage>/<VARIABLE>` — the parameter's
last segment is the variable of the public contract — and are fetched with one paginated
`GetParametersByPath` call, decrypted, when a cold container first needs them. They stay cached
for `CACHE_SECONDS` across warm invocations: a function that runs every minute would otherwise
pay an SSM round trip (and count against SSM's request rate) every time, while a rotated key
still takes effect within minutes.

boto3 is imported only when parameters are fetched: it ships with the Lambda runtime and is not
a local runtime dependency.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reaper import log
from reaper.app.settings import channel_readers, key_variables, load_settings, provider_readers
from reaper.settings.model import Settings
from reaper.settings.parse import ConfigError

# The core's own secrets; each provider's and channel's come with its plugin.
CORE_SECRETS = ("REAPER_PING_KEY", "REAPER_ADMIN_KEY")
_READERS = (*provider_readers(), *channel_readers())
# The variables that are secret, or that belong with one (an id goes with its token): read
# from SSM only, and ignored (with a warning) if found in the plain environment.
SECRET_VARIABLES = (
    tuple(dict.fromkeys(name for reader in _READERS for name in reader.secret_variables))
    + CORE_SECRETS
)
NOT_SECRET = frozenset(name for reader in _READERS for name in reader.not_secret)
PROVIDER_KEYS = tuple(key_variables())
# The environment variable (set by serverless.yml) naming the parameter path.
PREFIX_VARIABLE = "REAPER_SSM_PREFIX"
CACHE_SECONDS = 300.0

_PREFIX = re.compile(r"(/[A-Za-z0-9_.-]+)+/")


@dataclass(frozen=True)
class _Fetched:
    values: dict[str, str]
    at: float


_cache: dict[str, _Fetched] = {}
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every fetched parameter (tests; a deliberate refresh)."""
    with _cache_lock:
        _cache.clear()


def normalise_prefix(raw: str | None) -> str:
    """`/reaper/prod` or `/reaper/prod/` -> `/reaper/prod/`; anything else is a config error."""
    prefix = (raw or "").strip()
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    if not _PREFIX.fullmatch(prefix):
        raise ConfigError(
            PREFIX_VARIABLE, f"expected an SSM parameter path like /reaper/prod/, got {raw!r}"
        )
    return prefix


def make_client() -> Any:
    """An SSM client with short timeouts: a cold start must not hang on SSM."""
    import boto3  # type: ignore[import-untyped,unused-ignore]
    from botocore.config import Config  # type: ignore[import-untyped,unused-ignore]

    config = Config(
        connect_timeout=3, read_timeout=5, retries={"mode": "standard", "max_attempts": 4}
    )
    return boto3.client("ssm", config=config)


def _aws_error(error: Exception) -> str:
    """The error's AWS code or class name: never its message, which could quote a value."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
    return type(error).__name__


def fetch_parameters(prefix: str, client: Any) -> dict[str, str]:
    """Every known variable under the path, decrypted. Parameters with other names are
    skipped and logged by name (a typo in a parameter name should be visible)."""
    values: dict[str, str] = {}
    request: dict[str, Any] = {"Path": prefix, "Recursive": False, "WithDecryption": True}
    while True:
        page = client.get_parameters_by_path(**request)
        for parameter in page.get("Parameters", []):
            name = str(parameter["Name"])[len(prefix) :]
            if name in SECRET_VARIABLES:
                values[name] = str(parameter["Value"])
            else:
                log.event("ssm_parameter_ignored", parameter=prefix + name, result="unknown name")
        token = page.get("NextToken")
        if not token:
            return values
        request["NextToken"] = token


def load_secrets(
    prefix: str,
    *,
    client: Any = None,
    now: Callable[[], float] = time.monotonic,
    max_age: float = CACHE_SECONDS,
) -> dict[str, str]:
    """The parameters under `prefix`, from the cache while it is younger than `max_age`.

    A failed fetch is a ConfigError naming the path and the AWS error code (AccessDenied
    usually means the parameter path or the KMS key is not the one the IAM policy allows).
    """
    with _cache_lock:
        cached = _cache.get(prefix)
        if cached is not None and now() - cached.at < max_age:
            return dict(cached.values)
    try:
        values = fetch_parameters(prefix, client if client is not None else make_client())
    except Exception as error:
        raise ConfigError(prefix, f"cannot read the SSM parameters ({_aws_error(error)})") from None
    log.event("ssm_parameters", path=prefix, count=len(values), result="fetched")
    with _cache_lock:
        _cache[prefix] = _Fetched(values=values, at=now())
    return dict(values)


def lambda_settings(
    environ: Mapping[str, str] | None = None,
    *,
    required: Sequence[str] = (),
    provider_keys: bool = False,
    client: Any = None,
    now: Callable[[], float] = time.monotonic,
) -> Settings:
    """The settings of a Lambda invocation: the plain environment (non-secret values) merged
    with the secrets from SSM, validated by the one `load_settings`.

    `required` names parameters this function cannot work without; `provider_keys` asks for at
    least one provider's key variable (PROVIDER_KEYS). Errors name the SSM parameter, not the
    variable, because the parameter is what the user must fix.
    """
    env = dict(os.environ if environ is None else environ)
    prefix = normalise_prefix(env.get(PREFIX_VARIABLE))
    leaked = [name for name in SECRET_VARIABLES if env.pop(name, "").strip()]
    if leaked:
        log.event("secret_in_environment", variables=leaked, result="ignored, read from SSM")
    secrets = {k: v for k, v in load_secrets(prefix, client=client, now=now).items() if v.strip()}
    for name in required:
        if name not in secrets:
            raise ConfigError(prefix + name, "missing: put it as a SecureString parameter")
    if provider_keys and not any(name in secrets for name in PROVIDER_KEYS):
        raise ConfigError(
            " / ".join(prefix + name for name in PROVIDER_KEYS),
            "set at least one (SecureString parameter)",
        )
    # Register before validating: a malformed key must not leak through a later log line.
    # (The chat id travels with its token but is not secret; redacting it would garble logs.)
    log.register_secrets([v for k, v in secrets.items() if k not in NOT_SECRET])
    try:
        settings = load_settings({**env, **secrets}, dotenv=None)
    except ConfigError as error:
        if error.variable in SECRET_VARIABLES:  # set (or missing) in SSM: name the parameter
            raise ConfigError(prefix + error.variable, error.expected) from None
        raise
    log.register_secrets(settings.secrets())
    return settings


__all__ = [
    "CACHE_SECONDS",
    "PREFIX_VARIABLE",
    "SECRET_VARIABLES",
    "clear_cache",
    "fetch_parameters",
    "lambda_settings",
    "load_secrets",
    "normalise_prefix",
]

"""Reading provider objects without trusting them.

Every client parses each instance through a pydantic model of the raw provider object that
declares only the fields reaper uses: secrets that ride along (an instance's environment, its
notebook token, its start script, ssh keys) are never declared, so they are dropped at
the first step and cannot reach an `Instance`, a log line or an exception.

One malformed object must not lose the whole listing, and must not be reaped either: the
fields that fail validation are dropped, what remains is read, and the caller marks the
instance "unknown" (never reaped, reported instead).

Every provider string that reaches an `Instance`, `Volume` or error is valid text: JSON may
carry a lone UTF-16 surrogate (`"\ud800"`), which Python keeps and which then fails every UTF-8
encode (the audit record, the store, `--json`, an alert). Names, labels and statuses are shown
as text (`CleanStr`, `reaper.text.shown`): besides surrogates, the control and format
characters that would reorder or hide what a person reads (U+202E mirrors the rest of a
warning's title) are replaced at the first step, so no alert, page, table or log line gets
them. An instance id that cleaning would change is unreadable instead (`ExactStr`), so it can
never become a different, valid-looking id.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from reaper import log
from reaper.core.models import Instance, ProviderName
from reaper.providers.base import UNREADABLE_ID_PREFIX
from reaper.text import shown

Model = TypeVar("Model", bound=BaseModel)


def clean_text(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD (well-formed pairs are joined), so that
    it encodes as UTF-8 wherever it goes."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _exact_text(text: str) -> str:
    if clean_text(text) != text:
        raise ValueError("not valid text")
    return text


# A provider string shown to people (a name, a label, a status): shown as text.
CleanStr = Annotated[str, AfterValidator(shown)]
# A provider string that names what a DELETE would target: unreadable unless already clean.
ExactStr = Annotated[str, AfterValidator(_exact_text)]


class RawModel(BaseModel):
    """The base of every raw provider model: unknown fields ignored, NaN and infinity refused.

    Python's json reads `NaN` and `Infinity`; kept, they would reach `--json` output that strict
    parsers reject, and comparisons that are always false. Refused, the field is unreadable
    like any other malformed one (see `read_tolerantly`).
    """

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


def read_tolerantly(model: type[Model], raw: dict[str, Any]) -> tuple[Model, list[str]]:
    """Validate `raw`; on failure drop the offending top-level fields and validate the rest.

    Returns the model and the names of the fields that could not be read (empty when the
    object was whole). Every field of `model` must have a default for the second pass to
    succeed. Pydantic's error text (which quotes input values) is never passed on.
    """
    try:
        return model.model_validate(raw), []
    except ValidationError as exc:
        bad = sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]})
    cleaned = {k: v for k, v in raw.items() if k not in bad}
    try:
        return model.model_validate(cleaned), bad
    except ValidationError:
        return model(), sorted(str(k) for k in raw)


def raw_status(value: object, present: bool) -> str:
    """The provider's status string as the contract reports it: "" when the field is missing,
    "null" when it is JSON null, the string itself otherwise."""
    if not present:
        return ""
    if value is None:
        return "null"
    if isinstance(value, str):
        return shown(value)
    # A number is shown as such; a nested object is not echoed (it is not a status).
    return str(value) if isinstance(value, int | float) else ""


def epoch_to_datetime(value: float | None) -> datetime | None:
    """Epoch seconds to an aware UTC datetime; absurd values are None rather than a crash."""
    if value is None or value != value or value <= 0:
        return None
    try:
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def note_unreadable(provider: str, account: str, instance_id: str, fields: list[str]) -> None:
    """Say which fields (names only, never values) could not be read."""
    log.event(
        "provider_unreadable_instance",
        provider=provider,
        account=account,
        id=instance_id,
        fields=",".join(fields),
        state="unknown",
    )


def not_an_object(provider: ProviderName, account: str, position: int) -> Instance:
    """A listing entry that is not a JSON object: kept, so the fleet stays whole, under an id
    named after its position and in state "unknown", so it is never reaped."""
    instance_id = f"{UNREADABLE_ID_PREFIX}{position}"
    note_unreadable(provider, account, instance_id, ["<not an object>"])
    return Instance(
        provider=provider, account=account, id=instance_id, state="unknown", raw_status=""
    )


def as_number(value: object) -> float | None:
    """A finite JSON number as float; anything else (a string, a bool, null, NaN, infinity, an
    integer too large for a float) is None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return finite(float(value))
    except OverflowError:
        return None


def finite(value: float | None) -> float | None:
    """`value` when it is a finite number, else None: what reaches an `Instance`, `Balance` or
    `Volume` must print as JSON, and arithmetic on finite inputs can still overflow."""
    return value if value is not None and math.isfinite(value) else None

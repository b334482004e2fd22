"""Reading an HTTP answer no larger than a cap, for every client of a server reaper does not
control (providers, alert channels, a chat bot's API).

An answer is read as it arrives and given up one byte past the cap, so a 500 MB body or an
endless stream costs the cap in memory, not the stream; a declared length over the cap is
refused before anything is read. The total time an answer may take is its caller's
(`asyncio.timeout` around the request): a per-read timeout never fires on a trickle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a cold ping imports no HTTP client
    import httpx


def byte_size(size: int) -> str:
    """A size as a person reads it: "8 MB", "256 KB", "100 bytes"."""
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


async def read_capped(response: httpx.Response, cap: int) -> bytes | None:
    """The body of a streamed response, or None when it holds more than `cap` bytes."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)

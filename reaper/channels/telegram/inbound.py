"""Telegram button presses, answered: the same handling for both ways they arrive.

- Webhook (`TELEGRAM_WEBHOOK_SECRET` set; on AWS, or under `reaper serve`): Telegram POSTs each
  update to `/telegram/<secret>` with the secret in `X-Telegram-Bot-Api-Secret-Token`; the route
  checks both before anything is read (`reaper.interfaces.http`) and calls `answer_webhook`.
- Long polling (the secret unset, under `reaper serve`): `Poller` asks `getUpdates` in a loop —
  a laptop behind NAT needs no public URL for it.

Every press is answered (`answerCallbackQuery`), refused ones too, with one line saying why; a
webhook update is answered 200 even when the press is refused, or Telegram would send it again.
A press counts only from TELEGRAM_CHAT_ID, and its data is only a handle to a stored grant
(`reaper.passes.act`); what was done is written under the message ("✅ Kept … until … by
@name"). "Terminate now" asks for a second press first: a confirm button is added under the
message, valid for minutes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from reaper import log
from reaper.channels.telegram.bot import (
    BotError,
    Press,
    TelegramBot,
    from_chat,
    parse_press,
    update_id,
    with_result,
)
from reaper.channels.telegram.send import TelegramSettings
from reaper.core import messages
from reaper.core.models import ActionGrant, ActionRecord
from reaper.passes.act import ActContext, Actor, Outcome, lookup, perform
from reaper.passes.arm import token_of_callback

MARKS = {"done": "✅", "not_done": "⛔"}
# Back-off of the long poll after a failed getUpdates: 1, 2, 4 ... up to this many seconds.
POLL_BACKOFF_MAX = 60.0


def telegram_settings(ctx: ActContext) -> TelegramSettings | None:
    found = ctx.settings.channel("telegram")
    return found if isinstance(found, TelegramSettings) else None


async def _quietly(call: Awaitable[None], what: str) -> None:
    """A failed answer or edit is logged, never raised: the action stands either way."""
    try:
        await call
    except BotError as exc:
        log.event("telegram_press", step=what, result="failed", error=str(exc))


def _without(keyboard: list[list[dict[str, Any]]], data: str) -> list[list[dict[str, Any]]]:
    rows = [[b for b in row if b.get("callback_data") != data] for row in keyboard]
    return [row for row in rows if row]


async def handle_update(update: Any, ctx: ActContext, bot: TelegramBot) -> str:
    """Answer one update; a word for the log: "acted", "asked", "refused" or "ignored"."""
    press = parse_press(update)
    if press is None:
        return "ignored"
    if not from_chat(press, bot.chat_id):
        log.event("telegram_press", result="refused", reason="another chat")
        await _quietly(bot.answer(press.callback_id, messages.REFUSED_CHAT), "answer")
        return "refused"
    token = token_of_callback(press.data)
    if token is None:
        log.event("telegram_press", result="refused", reason="not our button")
        await _quietly(bot.answer(press.callback_id, messages.REFUSED_UNKNOWN), "answer")
        return "refused"
    found = lookup(ctx.store, token, ctx.clock.now())
    refusal = None if isinstance(found, str) else _refusal(found, press, ctx)
    if refusal is not None:
        await _quietly(bot.answer(press.callback_id, refusal), "answer")
        return "refused"
    answered = False
    if not isinstance(found, str) and not found.ask_first and _terminates(found):
        # The pass takes seconds: the phone hears at once that it is under way.
        await _quietly(bot.answer(press.callback_id, messages.ACTION_CHECKING), "answer")
        answered = True
    outcome = await perform(ctx, token, Actor(who=press.who, via="chat button"))
    await _show(bot, press, outcome, answered)
    return {"ask": "asked", "refused": "refused"}.get(outcome.status, "acted")


def _terminates(grant: ActionGrant) -> bool:
    return any(choice.kind == "terminate" for choice in grant.choices)


def _refusal(grant: ActionGrant, press: Press, ctx: ActContext) -> str | None:
    """Why this member's press may not use the grant, or None when it may: Keep and Mute from
    anyone in the chat, "Terminate now" (its first press and its confirmation) only from
    TELEGRAM_ALLOWED_USERS — in a group any member could press it, and who pressed would only be
    written down. A refused press is recorded, answered by the caller, and does nothing (the
    grant stays unused for a member who may)."""
    settings = telegram_settings(ctx)
    if not _terminates(grant) or (settings is not None and settings.may_terminate(press.user_id)):
        return None
    text = settings.refusal(press.user_id) if settings is not None else messages.REFUSED_UNKNOWN
    log.event("telegram_press", result="refused", reason="user may not terminate")
    action = grant.choices[0]
    ctx.store.record_action(
        ActionRecord(
            at=ctx.clock.now(),
            kind=action.kind,
            label=action.label,
            targets=action.targets,
            subject=action.subject,
            by=press.who,
            via="chat button",
            done=False,
            result=text,
        )
    )
    return text


async def _show(bot: TelegramBot, press: Press, outcome: Outcome, answered: bool) -> None:
    if not answered:
        await _quietly(bot.answer(press.callback_id, outcome.text), "answer")
    if outcome.status == "refused":
        return
    if outcome.status == "ask":
        assert outcome.confirm is not None
        confirm = {"text": outcome.confirm_label, "callback_data": outcome.confirm}
        rows = [r for r in press.keyboard if r[:1] and r[0].get("text") != outcome.confirm_label]
        await _quietly(bot.edit_keyboard(press, [*rows, [confirm]]), "edit")
        return
    keyboard = _without(press.keyboard, press.data)
    edited = with_result(press, f"{MARKS[outcome.status]} {outcome.text}")
    if edited is None:
        await _quietly(bot.edit_keyboard(press, keyboard), "edit")
    else:
        text, entities = edited
        await _quietly(bot.edit_text(press, text, entities, keyboard), "edit")


async def answer_webhook(body: bytes, ctx: ActContext) -> tuple[int, str]:
    """A webhook update (its secret already checked): the status and one line."""
    settings = telegram_settings(ctx)
    if settings is None:
        return 404, "Not Found"
    try:
        update = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return 400, "expected a Telegram update (a JSON object)"
    if not isinstance(update, dict):
        return 400, "expected a Telegram update (a JSON object)"
    result = await handle_update(update, ctx, TelegramBot(settings))
    log.event("telegram_update", via="webhook", update_id=update_id(update), result=result)
    return 200, "OK"


Sleep = Callable[[float], Awaitable[None]]


class Poller:
    """`getUpdates` in a loop, each update handled in turn (a press waits for the one before:
    two passes never race for one instance). Each call confirms the updates before its
    `offset`; a failed call backs off (1 s doubling to POLL_BACKOFF_MAX) and tries again; a
    webhook set for the bot (409) is said once per back-off. `interrupt()` ends the loop
    between two updates, cancelling a long poll under way; an update being handled finishes
    first."""

    def __init__(
        self,
        ctx: ActContext,
        bot: TelegramBot,
        *,
        poll_seconds: int = 25,
        backoff_base: float = 1.0,
    ) -> None:
        self.ctx = ctx
        self.bot = bot
        self.poll_seconds = poll_seconds
        self.backoff_base = backoff_base
        self.offset: int | None = None
        self.handled = 0
        self._stopped = False
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def interrupt(self) -> None:
        self._stopped = True
        if self._stop is not None:
            self._stop.set()

    def _stop_event(self) -> asyncio.Event:
        """The stop as an event of the running loop (an event belongs to one loop)."""
        loop = asyncio.get_running_loop()
        if self._stop is None or self._loop is not loop:
            self._stop, self._loop = asyncio.Event(), loop
            if self._stopped:
                self._stop.set()
        return self._stop

    async def _or_stop(self, job: Awaitable[Any]) -> tuple[bool, Any]:
        """(True, result) when `job` finished first; (False, None) when interrupted."""
        task = asyncio.ensure_future(job)
        stop = asyncio.ensure_future(self._stop_event().wait())
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            stop.cancel()
            return True, task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return False, None

    async def run(self) -> None:
        """Until interrupted."""
        failures = 0
        while not self._stopped:
            try:
                finished = await self.poll_once()
            except BotError as exc:
                failures += 1
                wait = min(POLL_BACKOFF_MAX, self.backoff_base * 2 ** (failures - 1))
                hint = (
                    " (a webhook is set for this bot: `reaper telegram-webhook --delete`"
                    " returns to long polling)"
                    if exc.status == 409
                    else ""
                )
                log.event("telegram_poll", result="failed", error=f"{exc}{hint}", retry_in=wait)
                await self._or_stop(asyncio.sleep(wait))
                continue
            if not finished:
                return
            failures = 0

    async def poll_once(self) -> bool:
        """One getUpdates and the handling of what it brought; False when interrupted."""
        finished, updates = await self._or_stop(
            self.bot.get_updates(self.offset, self.poll_seconds)
        )
        if finished:
            await self._handle(updates)
        return bool(finished)

    async def _handle(self, updates: list[Any]) -> None:
        for update in updates:
            number = update_id(update)
            if number is not None:
                self.offset = max(self.offset or 0, number + 1)
            try:
                result = await handle_update(update, self.ctx, self.bot)
            except Exception as exc:  # one bad update never stops the loop
                result = f"error ({type(exc).__name__})"
            self.handled += 1
            log.event("telegram_update", via="poll", update_id=number, result=result)

"""Presses from whom: "Terminate now" counts only from TELEGRAM_ALLOWED_USERS — unset, from the
one user of a private chat, and in a group or a channel from nobody. Keep and Mute count from
any member of the configured chat. A refused press is answered, recorded, and does nothing: no
termination request, no DELETE, and the button stays usable by someone who may press it."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from reaper.channels.telegram.send import read_settings
from reaper.settings.parse import ConfigError, Env
from tests.fakes.telegram import ALICE, FAKE_TOKEN, Message, TelegramFake
from tests.phone_support import Phone, phone
from tests.settings_support import replaced

GROUP = "-1001234567890"
BOB = {"id": 77, "is_bot": False, "first_name": "Bob", "username": "bob"}


def _in_group(p: Phone, allowed: tuple[int, ...] | None) -> None:
    """The bot's chat becomes a group (its members: Alice and Bob)."""
    assert p.telegram is not None
    p.telegram.chat_id = GROUP
    p.w.settings = replaced(
        p.w.settings,
        telegram_bot_token=FAKE_TOKEN,
        telegram_chat_id=GROUP,
        telegram_api_url=p.telegram.url,
        telegram_allowed_users=allowed,
    )


def _asks(message: Message) -> bool:
    """Whether the message shows the confirmation a first "Terminate now" press adds."""
    return any(label.startswith("⚠️ Yes, terminate") for label in message.labels)


def _press(p: Phone, message: Message, button: str, user: dict[str, Any]) -> Message:
    assert p.telegram is not None
    p.telegram.press(message, button, user=user)
    p.poll()
    return p.telegram.message(message.message_id)


def test_in_a_group_without_allowed_users_nobody_may_terminate_but_anyone_may_keep(
    tmp_path: Path,
) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        _in_group(p, None)
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()

        after = _press(p, message, "Terminate now", ALICE)

        [answer] = p.telegram.answers
        assert "TELEGRAM_ALLOWED_USERS" in answer["text"] and "user 42" in answer["text"]
        assert not _asks(after)
        refused = p.actions()[-1]
        assert not refused.done and refused.by == "@alice (Telegram user 42)"
        assert refused.kind == "terminate"

        kept = _press(p, after, "Keep 1 day", BOB)
        assert "Kept" in kept.text and "@bob" in kept.text
        p.to_deadline()
        assert p.w.runpod.mutations == [] and p.w.runpod.entry(pod) is not None


def test_in_a_group_only_the_listed_users_terminate_their_confirmation_too(
    tmp_path: Path,
) -> None:
    with phone(tmp_path) as p:
        assert p.telegram is not None
        _in_group(p, (42,))
        pod = p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()

        refused = _press(p, message, "Terminate now", BOB)
        assert not _asks(refused)
        assert "came from user 77" in p.telegram.answers[-1]["text"]

        asked = _press(p, refused, "Terminate now", ALICE)
        assert _asks(asked)
        # Bob presses the confirmation Alice's press added: refused too.
        _press(p, asked, "⚠️ Yes, terminate", BOB)
        assert p.w.runpod.mutations == [] and p.w.runpod.entry(pod) is not None

        done = _press(p, p.telegram.message(message.message_id), "⚠️ Yes, terminate", ALICE)
        assert "✅ Terminated trainer-7" in done.text
        assert [r.method for r in p.w.runpod.mutations] == ["DELETE"]


def test_in_a_private_chat_only_its_user_terminates(tmp_path: Path) -> None:
    """Unset, a private chat's own user (its id is the chat's) may terminate; any other id —
    a forged update, a bot added later — may not."""
    with phone(tmp_path) as p:
        assert p.telegram is not None
        p.w.runpod.add_pod(status="EXITED", name="trainer-7")
        p.warn()
        message = p.warning_message()

        refused = _press(p, message, "Terminate now", BOB)
        assert not _asks(refused)
        assert "the private chat TELEGRAM_CHAT_ID" in p.telegram.answers[-1]["text"]
        asked = _press(p, refused, "Terminate now", ALICE)
        done = _press(p, asked, "⚠️ Yes, terminate", ALICE)
        assert "✅ Terminated trainer-7" in done.text
        assert [r.method for r in p.w.runpod.mutations] == ["DELETE"]


BOT = {"TELEGRAM_BOT_TOKEN": "123456:ABC-def_ghi", "TELEGRAM_CHAT_ID": GROUP}


@pytest.mark.parametrize("value", ["alice", "42,x", "-1001", "0", " , ", "@alice"])
def test_a_malformed_allowed_users_list_is_a_config_error_naming_it(value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        read_settings(Env({**BOT, "TELEGRAM_ALLOWED_USERS": value}))
    assert raised.value.variable == "TELEGRAM_ALLOWED_USERS"


def test_allowed_users_without_a_bot_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as raised:
        read_settings(Env({"TELEGRAM_ALLOWED_USERS": "42"}))
    assert raised.value.variable == "TELEGRAM_ALLOWED_USERS"


def test_who_may_terminate_is_said_in_words() -> None:
    listed = read_settings(Env({**BOT, "TELEGRAM_ALLOWED_USERS": "42, 77,42"}))
    assert listed is not None and listed.allowed_users == (42, 77)
    assert listed.who_may_terminate() == "Telegram users 42, 77 (TELEGRAM_ALLOWED_USERS)"
    group = read_settings(Env(BOT))
    assert group is not None and group.who_may_terminate() is None
    private = read_settings(Env({**BOT, "TELEGRAM_CHAT_ID": "42"}))
    assert private is not None and private.may_terminate(42) and not private.may_terminate(77)
    channel = read_settings(Env({**BOT, "TELEGRAM_CHAT_ID": "@my_channel"}))
    assert channel is not None and not channel.may_terminate(42)


def test_reaper_serve_says_at_start_who_may_press_terminate(tmp_path: Path) -> None:
    with TelegramFake() as fake:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "REAPER_STATE": f"sqlite:///{tmp_path / 'state.db'}",
            "TELEGRAM_BOT_TOKEN": FAKE_TOKEN,
            "TELEGRAM_CHAT_ID": GROUP,
            "TELEGRAM_API_URL": fake.url,
            "TELEGRAM_ALLOWED_USERS": "42,77",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "reaper", "serve", "--port", "0"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        threading.Thread(
            target=lambda: [lines.put(x) for x in proc.stdout or ()], daemon=True
        ).start()
        try:
            seen = ""
            while "listening=" not in seen:
                seen = lines.get(timeout=30)  # a start that never comes fails, never hangs
            assert "Terminate now from Telegram users 42, 77 (TELEGRAM_ALLOWED_USERS)" in seen
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)

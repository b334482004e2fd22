"""Alerts: one notifier interface, channels for Telegram and Bark, and the message texts."""

from reaper.notify.base import LogNotifier, Notifier, RecordingNotifier

__all__ = ["LogNotifier", "Notifier", "RecordingNotifier"]

"""Every alert channel reaper knows, by name, as the import path of its plugin module.

Imported on first use. Adding a channel is one module under `reaper/channels/` and one line
here; the order is the order alerts are delivered and listed in.
"""

CHANNELS: dict[str, str] = {
    "telegram": "reaper.channels.telegram",
    "bark": "reaper.channels.bark",
    "ntfy": "reaper.channels.ntfy",
    "slack": "reaper.channels.slack",
    "discord": "reaper.channels.discord",
    "webhook": "reaper.channels.webhook",
}

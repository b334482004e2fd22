"""The alert channels: how an alert reaches a phone.

- `base`: the notifier and channel protocols, the request and verdict shapes, the plugin
  description each channel module exports;
- `registry`: the names and import paths of the channel modules; `plugins`: the lookups that
  find them by name;
- `fanout`: one notifier over every configured channel, each delivered on its own with its own
  deadline, retries and backoff;
- one module (or package) per channel, named in `registry`, owning its settings and its
  server's answers (and, for a chat channel whose buttons come back, its inbound side).
"""

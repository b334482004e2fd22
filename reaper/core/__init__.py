"""What only computes: the models, the reap policy, leak detection, the heartbeat state
machine, the digest, every message text, units and the grammar of keys and hosts.

Nothing here does I/O or reads a clock, and nothing here names a provider or a channel: the
passes hand in what the providers listed and the time, and get decisions and words back. That
is what lets the safety rules be property-tested over thousands of generated fleets.
"""

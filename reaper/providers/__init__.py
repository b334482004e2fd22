"""The providers: what reaper lists and terminates on.

- `base`: the client protocol every provider implements, its options (`HttpOptions`) and the
  plugin description each provider package exports;
- `registry`: the names and import paths of the provider packages; `plugins`: the lookups that
  find them by name (`plugin`, `label`, `provider_host`, `canonical_id`, `settings_reader`);
- `http`: the one retrying request layer under every client; `parsing`: reading provider
  objects without trusting them;
- one package per provider, named in `registry`, owning every fact about it (its settings and
  secret variables, host prefix, id grammar, protection fields, what a termination loses, its
  words in messages); each `client` module is imported only when a client is made
  (`reaper.app.wiring`).
"""

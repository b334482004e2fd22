"""The providers: what reaper lists and terminates on.

- `base`: the client protocol every provider implements, the plugin description each provider
  package exports, and the registry functions (`plugin`, `make_clients`, `provider_host`,
  `canonical_id`) that find them by name;
- `registry`: the names and import paths of the provider packages;
- `http`: the one retrying request layer under every client; `parsing`: reading provider
  objects without trusting them;
- `runpod/`, `vast/`: one package per provider, owning every fact about it (its settings and
  secret variables, host prefix, id grammar, protection fields, what a termination loses, its
  words in messages); each `client` module is imported only when a client is made.
"""

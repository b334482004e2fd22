"""Every provider reaper knows, by name, as the import path of its plugin package.

The path is imported on first use, so that the Lambda HTTP function never loads a provider
client it does not call. Adding a provider is one package under `reaper/providers/`, its
emulator, and one line here.
"""

PROVIDERS: dict[str, str] = {
    "runpod": "reaper.providers.runpod",
    "vast": "reaper.providers.vast",
    "digitalocean": "reaper.providers.digitalocean",
}

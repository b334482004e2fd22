"""The on-instance kit (`infra/instance/common.sh`) and the providers' plugins agree: every host
the kit pings as (`<prefix>-$ID`) is a provider's heartbeat host prefix, each provider's prefix
is one the kit names, and each provider's API URL has the same variable and default on both
sides. A host prefix that differed would make the watch pass cross-check nothing: the monitor
of a billing instance would never be seen as that instance's."""

from __future__ import annotations

import re
from pathlib import Path

from reaper.providers.plugins import plugins

COMMON = Path(__file__).resolve().parents[1] / "infra" / "instance" / "common.sh"
# `h="runpod-$RUNPOD_POD_ID"`: a host the kit builds from an instance's own id.
KIT_HOST = re.compile(r'h="([a-z0-9]+-)\$')


def test_every_host_the_kit_names_is_a_providers_and_each_provider_is_named() -> None:
    text = COMMON.read_text(encoding="utf-8")
    named = set(KIT_HOST.findall(text))
    assert named, "the kit names no provider host: the pattern no longer matches common.sh"
    assert named == {provider.host_prefix for provider in plugins()}


def test_each_providers_api_url_has_the_same_variable_and_default_in_the_kit() -> None:
    text = COMMON.read_text(encoding="utf-8")
    for provider in plugins():
        variable, default = provider.kit.url_variable, provider.kit.default_url
        assert f"{variable}=${{{variable}:-{default}}}" in text, provider.name


def test_the_variables_the_kit_reads_of_an_instance_are_the_plugins() -> None:
    text = COMMON.read_text(encoding="utf-8")
    for provider in plugins():
        for variable in provider.kit.variables:
            assert f"${{{variable}:-" in text or f"${variable}" in text, variable

"""What `reaper demo` stages on the emulators beyond the example fleet (`fleet.example.json`,
whose accounts and keys the demo uses): a pod in a state nobody can read, and which instances
play which part — the pod whose watchdog goes silent while it bills (and whose job the
on-instance kit then ends), and the instance whose job sends a message through `/alert`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# (provider, instance id): the pod whose watchdog goes silent, and whose job run.sh ends.
WATCHED = ("runpod", "llm-finetune-a1")
# (provider, instance id): the instance whose job's message goes through /alert.
MESSAGING = ("vast", "4242001")
# (provider, instance id): the instance whose warning gets Keep 1 day pressed on the phone.
KEPT_FROM_PHONE = ("vast", "4242002")
# What the kit finds in the watched pod's environment besides reaper's URLs: the pod's id and
# a pod-scoped key, as RunPod sets them inside every pod.
KIT_ENV = {"RUNPOD_POD_ID": WATCHED[1], "RUNPOD_API_KEY": "pod-scoped-key-not-secret"}


def extras(emulators: Mapping[str, Any]) -> None:
    """Into the started emulators (by provider name), beyond the example fleet: a pod in a state
    no spec names — the reaper cannot read it, so it assumes busy."""
    emulators["runpod"].add_pod(
        "odd-one-e5", name="migrating-pod", status="MIGRATING", volume_gb=40
    )

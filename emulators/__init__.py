"""Local emulators of the RunPod, Vast and DigitalOcean APIs: faithful to the providers'
published specs, and to the live APIs where public clients show them answering otherwise (each
such place says so).

Every test, `reaper demo`, `reaper emulate` and the benchmarks run against these over real HTTP
on loopback. They are not part of the `reaper` package: `pip install -e ./emulators`.
Start one with a context manager and point the client (or `RUNPOD_API_URL` / `VAST_API_URL`)
at it:

    with RunPodEmulator({"main": "rp-key"}) as runpod, VastEmulator({"main": "vk"}) as vast:
        runpod.add_pod(status="EXITED")
        vast.add_instance(actual_status="stopped")
        # RUNPOD_API_URL=runpod.rest_url, RUNPOD_GRAPHQL_URL=runpod.graphql_url,
        # VAST_API_URL=vast.url
"""

from emulators.digitalocean import DigitalOceanEmulator
from emulators.runpod import RunPodEmulator
from emulators.server import EmulatorServer, RequestRecord, Response
from emulators.vast import VastEmulator

__all__ = [
    "DigitalOceanEmulator",
    "EmulatorServer",
    "RequestRecord",
    "Response",
    "RunPodEmulator",
    "VastEmulator",
]

"""Local emulators of the RunPod and Vast APIs, faithful to the specs in `shared/reference/`.

Every test, `reaper demo` and the benchmark run against these over real HTTP on loopback.
Start one with a context manager and point the client (or `RUNPOD_API_URL` / `VAST_API_URL`)
at it:

    with RunPodEmulator({"main": "rp-key"}) as runpod, VastEmulator({"main": "vk"}) as vast:
        runpod.add_pod(status="EXITED")
        vast.add_instance(actual_status="stopped")
        settings = Settings(..., runpod_api_url=runpod.rest_url,
                            runpod_graphql_url=runpod.graphql_url, vast_api_url=vast.url)
"""

from reaper.providers.emulator.runpod import RunPodEmulator
from reaper.providers.emulator.server import EmulatorServer, RequestRecord, Response
from reaper.providers.emulator.vast import VastEmulator

__all__ = ["EmulatorServer", "RequestRecord", "Response", "RunPodEmulator", "VastEmulator"]

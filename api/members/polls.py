"""The recorder's own reads: the routes that carry a member's status and telemetry, read every so
many seconds through the recorder's own address (so they are recorded like a client's), so that a
field session holds them even while no client asks."""

from __future__ import annotations

import asyncio
import contextlib

import httpx

POLLS = {
    "gateway": (
        "/api/v1/system/health",
        "/api/v1/system/info",
        "/api/v1/system/stats",
        "/api/v1/media/config",
        "/api/v1/monitor/summary",
    ),
    "automation": ("/api/health", "/api/stats/system", "/api/devices"),
}
"""What ``twin record --poll`` reads, by vendor."""


async def poll(url: str, vendor: str, every: float, api_key: str | None) -> None:
    """Read ``vendor``'s :data:`POLLS` at ``url`` every ``every`` seconds until cancelled (the
    automation server's device list, then each device's current values), with ``api_key`` as
    ``X-API-Key`` if given. Failed reads are skipped."""
    headers = {"X-API-Key": api_key} if api_key else {}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30, trust_env=False) as http:
        while True:
            for path in POLLS[vendor]:
                with contextlib.suppress(httpx.HTTPError):
                    response = await http.get(path)
                    if path == "/api/devices" and response.status_code == 200:
                        for device in _device_ids(response):
                            await http.get(f"/api/devices/{device}/current")
            await asyncio.sleep(every)


def _device_ids(response: httpx.Response) -> list[str]:
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        body = response.json()
        data = body.get("data", body)
        devices = data.get("devices", data) if isinstance(data, dict) else data
        return [str(d["id"]) for d in devices if isinstance(d, dict) and "id" in d]
    return []

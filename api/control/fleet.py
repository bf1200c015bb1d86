"""What the console shows of the fleet: every device of the automation server with its status and
its metrics' recent values, every camera's power, services and figures (``GET /fleet``); one
camera in detail (``GET /cameras/{id}``); and a camera's live stream
(``/cameras/{id}/video/{stream}``, WebSocket) in the gateway's own framing.

The stream is read off the same encoder the camera's gateway serves, without logging in to it:
watching from the console is not a client of the gateway, takes none of its five connections per
address, and leaves nothing in the request journal.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query, Request, WebSocket
from starlette.websockets import WebSocketDisconnect

from api.control.deps import (
    ConsoleControl,
    Directory,
    clock_json,
    console,
    error_response,
    has,
    plain,
)
from api.gateway.routers.media import pack
from api.gateway.ws import deny, drain, until_first_ends
from hardware.ports.devices import Device
from hardware.ports.errors import DomainError, Unavailable
from hardware.ports.gateway import GatewayBackend
from hardware.ports.media import MediaViewer

router = APIRouter(tags=["fleet"])
REBUILD_POLL_S = 0.25
"""How often (wall seconds) a console video socket checks whether its world was rebuilt."""


def _sensor(device: Device, series: dict[str, Any] | None) -> dict[str, Any]:
    series = series or {"times": [], "metrics": {}, "units": {}}
    return {
        "id": device.device_id,
        "name": device.name,
        "type": device.device_type,
        "status": device.status,
        "last_seen": device.last_seen,
        "simulated": device.simulated,
        "times": series["times"],
        "metrics": series["metrics"],
        "units": series.get("units", {}),
    }


def _read(read: Callable[[], Any]) -> Any:
    """One area of a camera: its value, or ``{"error": message}`` when the camera cannot answer."""
    try:
        return read()
    except DomainError as err:
        return {"error": err.message}


def _figures(gateway: GatewayBackend) -> dict[str, float]:
    """The figures a camera's sparklines follow."""
    out: dict[str, float] = {}
    with contextlib.suppress(DomainError):
        out["soc_temp_c"] = gateway.peripherals.device_status().soc_temp_c
    with contextlib.suppress(DomainError):
        npu = gateway.system.stats().ai_runtime
        if npu is not None:
            out["npu_percent"] = npu.device_utilization
    with contextlib.suppress(DomainError):
        for p in gateway.storage.usage():
            if p.name in ("root", "data"):
                out[f"{p.name}_percent"] = p.usage_percent
    return out


def _camera(control: ConsoleControl, camera_id: str) -> dict[str, Any]:
    state = control.camera_state(camera_id)
    gateway = control.gateway(camera_id)
    viewers = _read(lambda: sum(s.viewers for s in gateway.media.status()))
    figures = _figures(gateway) if state["powered"] else {}
    return {**state, "viewers": viewers if isinstance(viewers, int) else 0, "metrics": figures}


def readings(
    control: ConsoleControl, page: int, limit: int, points: int, *, sensors: bool = True
) -> dict[str, Any]:
    """What the console shows of a world: a page of its devices (``sensors``: the world has the
    automation server) and its cameras."""
    out: dict[str, Any] = {}
    if sensors:
        devices, total, series = control.sensors(page, limit, points)
        found = [_sensor(d, series.get(d.device_id)) for d in devices]
        out["sensors"] = {"page": page, "limit": limit, "total": total, "devices": found}
    out["cameras"] = [_camera(control, camera_id) for camera_id in control.camera_ids()]
    return out


@router.get("/fleet")
async def fleet(
    request: Request,
    page: int = Query(default=1, ge=1),
    limit: int = Query(default=100, ge=1, le=1000),
    points: int = Query(default=60, ge=1, le=240),
) -> dict:
    """A page of devices (each with its metrics' last ``points`` values at its sampling ticks) and
    every camera with its power, services and current figures. A sharded world's coordinator
    also says where each member is (its URLs, shard and node) and each shard's state."""
    found = request.app.state.control
    if isinstance(found, Directory):
        clock = clock_json(found.clock.state())
        where = {"members": found.members(), "shards": found.shards()}
        return {"clock": clock, **where, **found.readings(page, limit, points)}
    control = await console(request)
    return {"clock": clock_json(control.clock.state()), **readings(control, page, limit, points)}


def camera_detail(control: ConsoleControl, camera_id: str) -> dict[str, Any]:
    """One camera as the console shows it: every area, or ``{"error"}`` for one it cannot answer."""
    gateway = control.gateway(camera_id)

    def partitions() -> list[dict[str, Any]]:
        found = gateway.storage.usage()
        return [{**plain(p), "free": p.free, "usage_percent": p.usage_percent} for p in found]

    areas: dict[str, Callable[[], Any]] = {
        "info": lambda: plain(gateway.system.info()),
        "device_time": lambda: plain(gateway.system.device_time()),
        "lens": lambda: plain(gateway.lens.status()),
        "autofocus": lambda: plain(gateway.autofocus.af_status()),
        "peripherals": lambda: plain(gateway.peripherals.device_status()),
        "partitions": partitions,
        "apps": lambda: [plain(a) for a in gateway.apps.list()],
        "streams": lambda: [plain(s) for s in gateway.media.status()],
        "ota": lambda: plain(gateway.ota.report()),
        "os_upgrade": lambda: gateway.os_upgrade.report(),
    }
    return {"state": control.camera_state(camera_id)} | {name: _read(read) for name, read in areas.items()}


@router.get("/cameras/{camera_id}")
async def camera(camera_id: str, request: Request) -> dict:
    """One camera: power and services, firmware, lens and autofocus, peripherals, partitions, apps,
    streams, OTA and OS-upgrade state. An area the camera cannot answer shows ``{"error"}``."""
    found = request.app.state.control
    if isinstance(found, Directory):  # read on the shard that holds it
        return found.camera_detail(camera_id)
    return camera_detail(await console(request), camera_id)


@router.websocket("/cameras/{camera_id}/video/{stream_id}")
async def video(websocket: WebSocket, camera_id: str, stream_id: str) -> None:
    """The stream as the gateway frames it (18-byte header + AVCC access unit per message, SPS/PPS
    first). Refused before the upgrade, in the control plane's error shape: an unknown camera or
    stream (404), a camera that is down or a stream that cannot start (503)."""
    try:
        control: ConsoleControl = has(websocket.app.state.control, "camera_state", "console readings")
        gateway = control.gateway(camera_id)
        if not gateway.reachable():
            raise Unavailable(f"{camera_id} is down")
        viewer = gateway.media.open_viewer(stream_id)
    except DomainError as err:
        await deny(websocket, error_response(err))
        return
    generation = control.generation()
    try:
        await websocket.accept()
        await viewer.stream.primed()
        await websocket.send_bytes(pack(viewer.config_frame()))
        viewer.stream.request_keyframe()
        frames = _frames(websocket, viewer, control, generation)
        rebuilt = _until_rebuilt(websocket, control, generation)
        await until_first_ends(websocket, frames, drain(websocket), rebuilt)
    except (DomainError, WebSocketDisconnect):
        pass
    finally:
        viewer.close()


async def _until_rebuilt(websocket: WebSocket, control: ConsoleControl, generation: int) -> None:
    """A viewer watches one world's encoder: when the world is rebuilt (a reset, a restore, a
    scenario run) that encoder stops for good, so the socket closes with 1012 (service restart)
    and the console opens the new world's stream."""
    while control.generation() == generation:
        await asyncio.sleep(REBUILD_POLL_S)
    await _close_rebuilt(websocket)


async def _close_rebuilt(websocket: WebSocket) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        await websocket.close(code=1012, reason="the world was rebuilt")


async def _frames(
    websocket: WebSocket, viewer: MediaViewer, control: ConsoleControl, generation: int
) -> None:
    with contextlib.suppress(DomainError, WebSocketDisconnect, RuntimeError):
        while True:
            await websocket.send_bytes(pack(await viewer.next_frame()))
    if control.generation() != generation:  # the old world's encoder closed its viewers
        await _close_rebuilt(websocket)

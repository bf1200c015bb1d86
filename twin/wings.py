"""The registration of the twin's device kinds: the one place a kind is made known.

Each :class:`twin.kinds.Kind` names how its wing is built on a world, the servers it exposes, its
scenario fleet entry and its timeline actions. The world builds the wings of :data:`KINDS` in
order, the composition root (:mod:`twin.serve`) serves what each exposes, and the scenario schema
and actions are read off it, so a new kind is one ``KINDS.register(...)`` call.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping

from api.automation.app import create_app as create_automation_app
from api.automation.ratelimit import RateLimiter
from api.gateway.app import create_app as create_gateway_app
from api.gateway.rtsp import RtspServer
from api.gateway.storm import StormMiddleware
from api.members.gates import AutomationGate, GatewayGate
from hardware.adapters.host_stats import HostFigures
from hardware.adapters.serial_port import SerialRs485
from hardware.ports.events import EventKind
from twin.automation.actions import AUTOMATION_ACTIONS
from twin.automation.backend import TwinAutomation
from twin.automation.delivery import run_worker
from twin.automation.links import run_links
from twin.automation.network import network_info
from twin.automation.server import AUTOMATION, AutomationServer, automation_of
from twin.camera.actions import CAMERA_ACTIONS
from twin.camera.gateway import TwinGateway
from twin.camera.wing import CAMERAS, CameraWing, cameras_of
from twin.kinds import Kind, Kinds
from twin.sensors import SENSORS, SensorWing, sensors_of
from twin.serving import Address, Served, Site
from twin.settings import Settings
from twin.world import World


def automation_servers(site: Site) -> list[Served]:
    """The automation API, on ``--host:--port`` (or the real server or replay in its place)."""
    s = site.settings
    backend = TwinAutomation(site.world, site.clock)
    limiter = RateLimiter(site.base_limit, site.clock.now)
    if s.api_key:
        automation_of(site.world).api_keys.ensure_default(s.api_key)
    simulated = create_automation_app(backend, release=s.release, limiter=limiter, network=network_info(s))
    app = site.member(AUTOMATION, simulated, AutomationGate(limiter, s.release))
    address = Address(AUTOMATION, s.host, s.port, path="/api")
    world = site.world
    tasks = (
        ("delivery", lambda: run_worker(lambda: automation_of(world))),
        ("links", lambda: run_links(lambda: automation_of(world), lambda: backend.im_router)),
    )
    return [
        Served(
            AUTOMATION, AUTOMATION, backend, app, (address,), "automation API", limiter, rank=0, tasks=tasks
        )
    ]


def camera_address(settings: Settings, index: int) -> tuple[str, int, int, int]:
    """Camera ``index``'s host and its gateway's HTTP, HTTPS and RTSP ports: its own loopback
    address with the configured ports, or ``127.0.0.1`` with each configured port offset by the
    camera's place (0 stays 0: any free port)."""
    s = settings
    if s.gateway_addressing != "port":
        return f"127.0.1.{index}", s.gateway_http_port, s.gateway_https_port, s.rtsp_port

    def offset(port: int, by: int) -> int:
        return port + by if port else 0

    return (
        "127.0.0.1",
        offset(s.gateway_http_port, index),
        offset(s.gateway_https_port, index),
        offset(s.rtsp_port, index - 1),
    )


def camera_servers(site: Site) -> list[Served]:
    """Per camera: its edge gateway over HTTP and HTTPS, and its RTSP server (a real camera's RTSP
    is its own). The gateways' rate limiters count during a storm only."""
    s, world = site.settings, site.world
    cameras = cameras_of(world)
    gateways = {camera_id: TwinGateway(world, site.clock, camera_id) for camera_id in cameras}
    host_hardware(s, world, gateways, site.real)  # RS485 on a serial port, /proc figures
    out = []
    for camera_id, camera in cameras.items():
        gateway = gateways[camera_id]
        simulated = create_gateway_app(gateway)
        app = site.member(camera_id, simulated, GatewayGate())
        limiter = RateLimiter(site.base_limit, site.clock.now)
        app.add_middleware(StormMiddleware, limiter=limiter)
        host, http, https, rtsp = camera_address(s, camera.index)
        addresses = (
            Address(f"{camera_id}/http", host, http),
            Address(f"{camera_id}/https", host, https, tls=True),
        )
        served = Served(
            camera_id, CAMERAS, gateway, app, addresses, f"{camera_id} gateway", limiter,
            close=functools.partial(close_host_hardware, [gateway]),
        )  # fmt: skip
        if camera_id not in site.real:  # a real camera powers itself and serves its own RTSP
            served.powered = functools.partial(_powered, site, camera_id)
            served.rtsp = RtspServer(
                gateway, site.fault_set(camera_id), name=camera_id, host=host, port=rtsp,
                sleep=site.clock.sleep, udp=s.rtsp_udp, journal=site.journal,
                sim_time=lambda: site.clock.state().sim_time,
            )  # fmt: skip
            served.rtsp_port = gateway.media.use_rtsp_port
            # the media configuration routes reconcile it (a replay shares it)
            simulated.state.rtsp = served.rtsp
        out.append(served)
    return out


def host_hardware(
    settings: Settings, world: World, gateways: Mapping[str, TwinGateway], real: Collection[str]
) -> None:
    """Simulated cameras' parts on this machine's hardware in place of the world's, as the settings
    and the scenario's camera groups say: the RS485 on a serial port (what it receives becomes
    ``camera.rs485_rx``), the monitor's figures from ``/proc``. Each serial port is opened once
    here, so a wrong one stops the start (``SerialPortError``, an ``OSError``)."""
    specs = world.config.spec_by_camera()
    serial, hosted = settings.host_hardware(
        {camera_id: spec.rs485 for camera_id, spec in specs.items()},
        {camera_id: spec.host_stats for camera_id, spec in specs.items()},
        real,
    )
    for camera_id, url in serial.items():

        def on_rx(frame: bytes, camera_id: str = camera_id) -> None:
            world.emit(EventKind.CAMERA_RS485_RX, camera_id, data=frame.hex())

        port = SerialRs485(camera_id, url, on_rx)
        port.check()
        gateways[camera_id].host_rs485 = port
    for camera_id in hosted:
        gateways[camera_id].host_figures = HostFigures()


def close_host_hardware(gateways: Iterable[TwinGateway]) -> None:
    """Close the serial ports :func:`host_hardware` put behind these gateways."""
    for gateway in gateways:
        if isinstance(gateway.host_rs485, SerialRs485):
            gateway.host_rs485.close()


def _powered(site: Site, camera_id: str) -> bool | None:
    camera = cameras_of(site.world).get(camera_id)
    return None if camera is None else camera.powered


KINDS = Kinds()
"""The registered kinds, in building order: the sensor groups, the cameras, the automation server
(whose devices include the simulated sensors)."""

KINDS.register(Kind(SENSORS, lambda world: SensorWing(world, world.config.sensor_groups())))
KINDS.register(Kind(CAMERAS, CameraWing, servers=camera_servers, actions=CAMERA_ACTIONS))
KINDS.register(
    Kind(
        AUTOMATION,
        lambda world: AutomationServer(world, sensors_of(world)),
        servers=automation_servers,
        actions=AUTOMATION_ACTIONS,
    )
)

"""The composition root: the only module that wires the world, the API apps and the servers.

``build()`` makes everything without touching the network (tests use it with in-process
clients); ``serve()`` starts the clock driver, the MQTT broker and bridge, and every HTTP server
on one event loop, and shuts them all down cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from api import ws_denial
from api.automation.app import create_app as create_automation_app
from api.automation.ratelimit import RateLimiter, host_limit
from api.control.app import create_app as create_control_app
from api.faults import FaultMiddleware, FaultSet
from api.gateway.app import create_app as create_gateway_app
from api.gateway.rtsp import RtspServer
from api.gateway.storm import StormMiddleware
from api.gateway.tls import write_self_signed
from api.journal import JournalMiddleware
from api.members.app import member_app
from api.members.credentials import refused_credentials
from api.members.gates import AutomationGate, GatewayGate
from api.members.passthrough import Passthrough
from api.realtime.broker import EmbeddedBroker
from api.realtime.mqtt import DEVICE_FILTERS, MqttBridge
from api.realtime.mqtt_link import BridgeLink
from hardware.adapters.mqtt_fleet import FleetPublisher
from hardware.ports.events import EventKind
from hardware.ports.types import ClockMode
from twin.automation.backend import TwinAutomation
from twin.automation.delivery import run_worker
from twin.automation.links import run_links
from twin.automation.network import network_info
from twin.camera.gateway import TwinGateway, close_host_hardware, host_hardware
from twin.camera.video.source import parse_video_sources
from twin.clock import SimClock
from twin.control import TwinControl
from twin.fleet import WorldConfig, default_sensor_group
from twin.journal import RequestJournal
from twin.scenario.actions import describe
from twin.scenario.model import Scenario, load_scenario
from twin.settings import AUTOMATION, RealMember, Settings, in_words
from twin.store import Store
from twin.world import World

log = logging.getLogger("twin")

SHUTDOWN_GRACE_S = 2  # uvicorn's graceful shutdown: open connections get this long, then are closed
START_TIMEOUT_S = 10


@dataclass
class Twin:
    settings: Settings
    world: World
    clock: SimClock
    control: TwinControl
    automation: TwinAutomation
    gateways: dict[str, TwinGateway]
    faults: dict[str, FaultSet]
    automation_app: FastAPI | Passthrough
    gateway_apps: dict[str, FastAPI | Passthrough]
    control_app: FastAPI
    bridge: MqttBridge | None = None
    publisher: FleetPublisher | None = None
    mqtt_link: BridgeLink | None = None
    journal: RequestJournal | None = None
    rtsp: dict[str, RtspServer] = field(default_factory=dict)
    real: dict[str, Passthrough] = field(default_factory=dict)
    """The members served by a real device or server (by name), in place of their simulated app."""
    members: dict[str, RealMember] = field(default_factory=dict)  # each with the credential checked at start


def world_config(settings: Settings, loaded: Scenario | None = None) -> tuple[WorldConfig, ClockMode, float]:
    scenario = loaded or (load_scenario(settings.scenario) if settings.scenario else None)
    config = scenario.world_config(wall_now=time.time()) if scenario else WorldConfig()
    mode = ClockMode(scenario.clock.mode) if scenario else ClockMode.REALTIME
    speed = scenario.clock.speed if scenario else 1.0
    if settings.seed is not None:
        config = dataclasses.replace(config, seed=settings.seed)
    if settings.cameras is not None:
        config = dataclasses.replace(  # N cameras of the first group's kind
            config, cameras=dataclasses.replace(config.cameras, count=settings.cameras), camera_groups=()
        )
    if settings.video_sources:
        cameras = [camera_id for camera_id, _ in config.camera_specs()]
        config = dataclasses.replace(config, videos=parse_video_sources(settings.video_sources, cameras))
    if settings.sensors is not None:
        groups = config.sensors or (default_sensor_group(settings.sensors),)
        first = dataclasses.replace(groups[0], count=settings.sensors)
        config = dataclasses.replace(config, sensors=(first, *groups[1:]))
    if settings.step:
        mode = ClockMode.STEP
    if settings.speed is not None:
        speed = settings.speed
    mode, speed = settings.real_clock(mode, speed, in_words(scenario.real_names()) if scenario else "")
    return config, mode, speed


def host_rate_limit() -> int:
    """The real server's threshold for this host: from its cores and total memory."""
    mem_mb = 0
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as fh:
        mem_mb = int(fh.readline().split()[1]) // 1024
    return host_limit(os.cpu_count() or 1, mem_mb)


def _front(app: FastAPI | Passthrough, faults: FaultSet, journal: RequestJournal, name: str, clock: SimClock):
    """The layers every member is served behind, simulated or real: faults, the journal outermost."""
    app.add_middleware(FaultMiddleware, faults=faults, sleep=clock.sleep)
    app.add_middleware(JournalMiddleware, journal=journal, server=name)


def build(settings: Settings, *, record_trace: bool = False) -> Twin:
    scenario = load_scenario(settings.scenario) if settings.scenario else None
    config, mode, speed = world_config(settings, scenario)
    store = Store(settings.state_dir / "twin.sqlite3" if settings.state_dir else None)
    world = World(config, store=store, record_trace=record_trace)
    real = settings.real_members(list(world.cameras), scenario.real_members(os.environ) if scenario else {})
    clock = SimClock(world, mode=mode, speed=speed)
    automation = TwinAutomation(world, clock)
    faults: dict[str, FaultSet] = {"automation": FaultSet()}
    limiters = {"automation": (limiter := RateLimiter(settings.rate_limit or host_rate_limit(), clock.now))}
    if settings.api_key:
        world.api_keys.ensure_default(settings.api_key)
    automation_app = create_automation_app(
        automation, release=settings.release, limiter=limiter, network=network_info(settings)
    )
    replays = scenario.replays() if scenario else {}  # members served from a recorded session
    served = functools.partial(member_app, real=real, replays=replays, clock=clock, release=settings.release)
    automation_app = served(AUTOMATION, automation_app, AutomationGate(limiter, settings.release))
    journal = RequestJournal(world)
    _front(automation_app, faults["automation"], journal, "automation", clock)
    gateways: dict[str, TwinGateway] = {}
    gateway_apps: dict[str, FastAPI | Passthrough] = {}
    for camera_id in world.cameras:
        gateways[camera_id] = TwinGateway(world, clock, camera_id)
        faults[camera_id] = FaultSet()
        app = served(camera_id, create_gateway_app(gateways[camera_id]), GatewayGate())
        limiters[camera_id] = RateLimiter(limiter.base_limit, clock.now)  # counts during a storm only
        app.add_middleware(StormMiddleware, limiter=limiters[camera_id])
        _front(app, faults[camera_id], journal, camera_id, clock)
        gateway_apps[camera_id] = app
    host_hardware(settings, world, gateways, real)  # RS485 on a serial port, /proc figures
    passthroughs = {name: {AUTOMATION: automation_app, **gateway_apps}[name] for name in real}
    control = TwinControl(
        world, clock, faults=faults, limiters=limiters, journal=journal, gateways=gateways, real=passthroughs
    )
    twin = Twin(
        settings,
        world,
        clock,
        control,
        automation,
        gateways,
        faults,
        automation_app,
        gateway_apps,
        create_control_app(control, faults, limiters, journal=journal, actions=describe()),
        journal=journal,
        real=passthroughs,
        members=real,
    )
    for camera_id, camera in world.cameras.items():
        if camera_id in real:
            continue  # a real camera's RTSP is its own
        host, port = _rtsp_address(settings, camera.index)
        twin.rtsp[camera_id] = server = RtspServer(
            gateways[camera_id], faults[camera_id], name=camera_id, host=host, port=port,
            sleep=clock.sleep, udp=settings.rtsp_udp, journal=journal,
        )  # fmt: skip
        gateway_apps[camera_id].state.rtsp = server  # the media configuration routes reconcile it
    mqtt_url = settings.mqtt_url or f"mqtt://127.0.0.1:{settings.mqtt_port}"
    twin.bridge = bridge = MqttBridge(automation, mqtt_url)
    automation.mqtt_ready = lambda: bridge.connected
    twin.mqtt_link = BridgeLink(bridge, settings.mqtt_host, settings.mqtt_port, settings.mqtt_url)
    automation.mqtt.attach(twin.mqtt_link, DEVICE_FILTERS)
    if (out := settings.publish_fleet) is not None:  # the simulated sensors on an outside broker
        twin.publisher = FleetPublisher(automation, out.url, out.login, buffer=out.buffer, seed=world.seed)
        twin.control_app.state.publisher = twin.publisher
    return twin


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signal handling to :func:`serve` (several share one loop)."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


@dataclass
class Listener:
    name: str
    server: _Server
    scheme: str = "http"
    task: asyncio.Task | None = None
    bound: tuple[str, int] | None = None
    """Where it listens, kept so a listener closed while its camera is down re-binds the same port."""

    @property
    def address(self) -> tuple[str, int]:
        if self.bound is not None:
            return self.bound
        sock = self.server.servers[0].sockets[0]
        host, port = sock.getsockname()[:2]
        return host, port

    @property
    def url(self) -> str:
        host, port = self.address
        return f"{self.scheme}://{host}:{port}"


@dataclass
class Running:
    twin: Twin
    listeners: dict[str, Listener] = field(default_factory=dict)
    broker: EmbeddedBroker | None = None
    tasks: list[asyncio.Task] = field(default_factory=list)
    supervisor: asyncio.Task | None = None
    refused: list[str] = field(default_factory=list)  # real members that refused their credential at start

    def url(self, name: str) -> str:
        return self.listeners[name].url

    def spawn(self, work: Coroutine, name: str) -> None:
        """A background task of the twin's, cancelled by :func:`stop`."""
        self.tasks.append(asyncio.create_task(work, name=name))


def _gateway_address(settings: Settings, index: int) -> tuple[str, int, int]:
    if settings.gateway_addressing == "port":
        http = settings.gateway_http_port + index if settings.gateway_http_port else 0
        https = settings.gateway_https_port + index if settings.gateway_https_port else 0
        return "127.0.0.1", http, https
    return f"127.0.1.{index}", settings.gateway_http_port, settings.gateway_https_port


def _rtsp_address(settings: Settings, index: int) -> tuple[str, int]:
    if settings.gateway_addressing == "port":
        return "127.0.0.1", settings.rtsp_port + index - 1 if settings.rtsp_port else 0
    return f"127.0.1.{index}", settings.rtsp_port


def _server(app: FastAPI | Passthrough, host: str, port: int, **ssl: str) -> _Server:
    own = not isinstance(app, Passthrough)  # a real member's Date and Server headers are its own
    config = uvicorn.Config(
        ws_denial.tracking_denials(app),
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="websockets-sansio",
        ws_per_message_deflate=False,  # as the automation server (tungstenite has none); saves zlib per frame
        server_header=own,
        date_header=own,
        **ssl,
    )
    return _Server(config)


def _bind(listener: Listener) -> socket.socket:
    """Bind here rather than in uvicorn, which would ``sys.exit`` from inside the event loop."""
    host, port = listener.server.config.host, listener.server.config.port
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise OSError(err.errno, f"{listener.name}: cannot listen on {host}:{port} ({err.strerror})") from err
    sock.set_inheritable(True)
    return sock


async def start(twin: Twin, cert_dir: Path) -> Running:
    """Start everything; returns once every listener is bound. Raises ``OSError`` if one cannot bind."""
    running = Running(twin)
    try:
        await _start(running, cert_dir)
    except OSError:
        await stop(running)
        raise
    running.refused = await refused_credentials(twin.real, twin.members)
    return running


async def _start(running: Running, cert_dir: Path) -> None:
    twin, s = running.twin, running.twin.settings
    if s.mqtt_url is None:  # on the stored configuration, if any; the link follows whichever broker runs
        mqtt = twin.automation.mqtt
        running.broker = await twin.mqtt_link.start_broker(*mqtt.startup(), mqtt.auth)
        twin.mqtt_link.current = lambda: running.broker
    running.spawn(twin.clock.run(), "clock")
    running.spawn(twin.bridge.run(), "mqtt-bridge")
    if twin.publisher is not None:
        running.spawn(twin.publisher.run(), "fleet-publisher")
    running.spawn(run_worker(lambda: twin.world), "delivery")
    running.spawn(run_links(lambda: twin.world, lambda: twin.automation.im_router), "links")
    listeners = [
        Listener("automation", _server(twin.automation_app, s.host, s.port)),
        Listener("control", _server(twin.control_app, s.control_host, s.control_port)),
    ]
    cameras = twin.world.cameras
    hosts = {"localhost", "127.0.0.1", *(_gateway_address(s, c.index)[0] for c in cameras.values())}
    cert, key = write_self_signed(cert_dir, sorted(hosts))
    tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    for camera_id, camera in cameras.items():
        host, http, https = _gateway_address(s, camera.index)
        app = twin.gateway_apps[camera_id]
        listeners.append(Listener(f"{camera_id}/http", _server(app, host, http)))
        listeners.append(Listener(f"{camera_id}/https", _server(app, host, https, **tls), scheme="https"))
    sockets: list[socket.socket] = []
    try:
        for listener in listeners:
            sockets.append(_bind(listener))
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    for listener, sock in zip(listeners, sockets, strict=True):
        _launch(listener, sock)
        running.listeners[listener.name] = listener
    for listener in listeners:
        if not await _serving(listener):
            raise OSError(f"{listener.name}: server failed to start")
        listener.bound = listener.address
    for camera_id, rtsp in twin.rtsp.items():
        twin.gateways[camera_id].media.use_rtsp_port(await rtsp.start())
        await rtsp.reconcile()
    running.supervisor = asyncio.create_task(_supervise_power(running), name="gateway-power")


def _launch(listener: Listener, sock: socket.socket) -> None:
    listener.task = asyncio.create_task(listener.server.serve(sockets=[sock]), name=listener.name)


async def _serving(listener: Listener) -> bool:
    """Wait for a launched listener to serve: ``False`` if it ended or did not start in time."""
    for _ in range(int(START_TIMEOUT_S / 0.005)):
        if listener.server.started or listener.task.done():
            break
        await asyncio.sleep(0.005)
    return listener.server.started


_POWER_EVENTS = (
    EventKind.CAMERA_POWER_DOWN,
    EventKind.CAMERA_POWER_UP,
    EventKind.CAMERA_BOOTED,
    EventKind.WORLD_RESET,
)


async def _supervise_power(running: Running) -> None:
    """A camera that is down refuses connections like the real device: close its HTTP and HTTPS
    listeners when it powers down and re-bind them (same host and port) when it is up again."""
    sub = running.twin.world.bus.subscribe(_POWER_EVENTS)
    try:
        while True:
            await sub.get()
            while sub.get_nowait() is not None:
                pass
            await _reconcile_power(running)
    finally:
        sub.close()


async def _reconcile_power(running: Running) -> None:
    for rtsp in running.twin.rtsp.values():  # down with its camera, back where its settings say
        await rtsp.reconcile()
    for camera_id, camera in running.twin.world.cameras.items():
        if camera_id in running.twin.real:
            continue  # a real camera powers itself
        for name in (f"{camera_id}/http", f"{camera_id}/https"):
            listener = running.listeners.get(name)
            if listener is None:
                continue
            serving = listener.task is not None and not listener.task.done()
            if camera.powered and not serving:
                try:
                    await _reopen(listener)
                except OSError as err:  # the port was taken meanwhile: stay down, retry on the next event
                    log.warning("twin: %s", err)
            elif not camera.powered and serving:
                listener.server.should_exit = True
                await _finish(listener.task)
                log.info("twin: %s closed while its camera is down", listener.name)


async def _reopen(listener: Listener) -> None:
    old = listener.server.config
    host, port = listener.address
    ssl = {"ssl_certfile": old.ssl_certfile, "ssl_keyfile": old.ssl_keyfile} if old.ssl_certfile else {}
    listener.server = _server(old.app, host, port, **ssl)
    _launch(listener, _bind(listener))
    await _serving(listener)
    log.info("twin: %s listening again", listener.name)


async def _finish(task: asyncio.Task) -> None:
    """Wait for a server task that was told to exit; cancel it if it outlives its grace period."""
    try:
        await asyncio.wait_for(asyncio.shield(task), SHUTDOWN_GRACE_S + 3)
    except TimeoutError:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
    except BaseException:  # the task's own failure: it is finished either way
        if asyncio.current_task().cancelling():  # unless we were cancelled while waiting
            raise


async def stop(running: Running) -> None:
    if running.supervisor is not None:
        running.supervisor.cancel()
        with contextlib.suppress(BaseException):
            await running.supervisor
    for rtsp in running.twin.rtsp.values():
        await rtsp.stop()
    for listener in running.listeners.values():
        listener.server.should_exit = True
    for listener in running.listeners.values():
        if listener.task is not None:
            await _finish(listener.task)
    for app in running.twin.real.values():
        await app.aclose()
    close_host_hardware(running.twin.gateways.values())
    for task in running.tasks:
        task.cancel()
    for task in running.tasks:
        with contextlib.suppress(BaseException):
            await task
    if running.broker is not None:
        with contextlib.suppress(Exception):
            await running.broker.stop()
    running.twin.world.store.close()


def banner(running: Running) -> str:
    t = running.twin
    lines = [
        f"twin: seed {t.world.seed}, {len(t.world.sensor_of)} sensors, {len(t.world.cameras)} cameras, "
        f"clock {t.clock.mode.value} x{t.clock.speed:g}, release {t.settings.release}",
        f"  automation API  {running.url('automation')}/api{' (real)' if AUTOMATION in t.real else ''}",
        f"  control plane   {running.url('control')}",
    ]
    if running.broker is not None:
        lines.append(f"  MQTT broker     mqtt://{t.settings.mqtt_host}:{running.broker.port}")
    for camera_id in t.world.cameras:
        lines.append(
            f"  {camera_id} gateway  {running.url(camera_id + '/http')}  {running.url(camera_id + '/https')}"
            + (" (real)" if camera_id in t.real else "")
        )
        rtsp = t.rtsp.get(camera_id)
        if rtsp is not None and rtsp.serving:
            lines.append(f"  {camera_id} RTSP     {rtsp.url('main')}")
    return "\n".join(lines)


async def serve(settings: Settings, on_start: Callable[[Running], object] | None = None) -> None:
    """Build and start the twin, then serve until SIGINT or SIGTERM. ``on_start`` is called once
    every listener is up, before the banner (``twin run`` puts the scenario's timeline and the MQTT
    broker switch on it there)."""
    twin = build(settings)
    stop_requested = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop_requested.set)
    with tempfile.TemporaryDirectory(prefix="twin-tls-") as cert_dir:
        running = await start(twin, Path(cert_dir))
        if on_start is not None:
            on_start(running)
        log.info("%s", banner(running))
        try:
            await stop_requested.wait()
        finally:
            log.info("twin: shutting down")
            await stop(running)

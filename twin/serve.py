"""The composition root: the only module that wires the world, the API apps and the servers.

``build()`` makes everything without touching the network (tests use it with in-process
clients): the world with the wings of the registered kinds (:mod:`twin.wings`), each kind's
servers, the control plane and the MQTT bridge. ``serve()`` starts the clock driver, the MQTT
broker and bridge, and every HTTP server on one event loop, and shuts them all down cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import os
import signal
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path

import uvloop
from fastapi import FastAPI

from api.automation.ratelimit import host_limit
from api.control.app import create_app as create_control_app
from api.control.guard import TOKEN_FILE, guarded
from api.faults import FaultMiddleware, FaultSet
from api.front import Front
from api.gateway.rtsp import RtspServer
from api.gateway.tls import write_self_signed
from api.journal import JournalMiddleware
from api.members.credentials import refused_credentials
from api.members.passthrough import Passthrough
from api.realtime.broker import EmbeddedBroker
from api.realtime.mqtt import DEVICE_FILTERS, MqttBridge
from hardware.adapters.broker_server import BrokerServer
from hardware.adapters.mqtt_fleet import FleetPublisher
from hardware.ports.events import EventKind
from hardware.ports.types import ClockMode
from twin import http_limits as limits
from twin import listeners as http
from twin.automation.backend import TwinAutomation
from twin.camera.gateway import TwinGateway
from twin.camera.video.source import parse_video_sources
from twin.camera.wing import CAMERAS, cameras_of
from twin.clock import SimClock
from twin.control import TwinControl
from twin.fleet import FleetSlice, WorldConfig, default_sensor_group
from twin.journal import RequestJournal
from twin.kinds import Kinds
from twin.listeners import Listener
from twin.loopwatch import LoopWatch
from twin.scenario.catalog import ACTIONS
from twin.scenario.model import Scenario, load_scenario
from twin.sensors import sensors_of
from twin.serving import App, Served, Site
from twin.settings import AUTOMATION, RealMember, Settings, in_words
from twin.state_dir import open_state
from twin.store import Store
from twin.wings import KINDS
from twin.world import World

log = logging.getLogger("twin")


@dataclass
class Twin:
    settings: Settings
    world: World
    clock: SimClock
    control: TwinControl
    served: dict[str, Served]
    """Every member the wings expose, by name, in start order."""
    faults: dict[str, FaultSet]
    control_app: FastAPI
    bridge: MqttBridge | None
    """The automation server's MQTT link; ``None`` in a shard that does not hold the server."""
    publisher: FleetPublisher | None = None
    journal: RequestJournal | None = None
    members: dict[str, RealMember] = field(default_factory=dict)  # each with the credential checked at start

    @property
    def real(self) -> dict[str, Passthrough]:
        """The members served by a real device or server (by name), in place of their simulated app."""
        return _real(self.served, self.members)

    @property
    def automation(self) -> TwinAutomation:
        return self.served[AUTOMATION].backend

    @property
    def automation_app(self) -> App:
        return self.served[AUTOMATION].app

    @property
    def gateways(self) -> dict[str, TwinGateway]:
        return {name: m.backend for name, m in self.served.items() if m.kind == CAMERAS}

    @property
    def gateway_apps(self) -> dict[str, App]:
        return {name: m.app for name, m in self.served.items() if m.kind == CAMERAS}

    @property
    def rtsp(self) -> dict[str, RtspServer]:
        return {name: m.rtsp for name, m in self.served.items() if m.rtsp is not None}


def _real(served: dict[str, Served], members: dict[str, RealMember]) -> dict[str, Passthrough]:
    return {name: app for name in members if isinstance(app := served[name].app, Passthrough)}


def world_config(
    settings: Settings, loaded: Scenario | None = None, wall_now: float | None = None
) -> tuple[WorldConfig, ClockMode, float]:
    """The world, clock mode and speed of ``settings``; ``epoch: now`` is ``wall_now`` (the shards of
    one world are given their coordinator's), else this instant."""
    scenario = loaded or (
        load_scenario(settings.scenario, allowed=settings.scenario_files) if settings.scenario else None
    )
    config = scenario.world_config(wall_now=wall_now or time.time()) if scenario else WorldConfig()
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


def _front(app: App, faults: FaultSet, journal: RequestJournal, name: str, clock: SimClock) -> None:
    """The layers every member is served behind, simulated or real: faults, the journal outermost;
    a simulated member's plain reads take the express lane under them, all three as one layer."""
    if isinstance(app, FastAPI):
        app.add_middleware(Front, owner=app, faults=faults, sleep=clock.sleep, journal=journal, server=name)
        return
    app.add_middleware(FaultMiddleware, faults=faults, sleep=clock.sleep)
    app.add_middleware(JournalMiddleware, journal=journal, server=name)


def build(
    settings: Settings,
    *,
    record_trace: bool = False,
    kinds: Kinds = KINDS,
    slice: FleetSlice | None = None,
    wall: Callable[[], float] = time.monotonic,
    wall_now: float | None = None,
) -> Twin:
    """The twin of ``settings``; with ``slice``, one shard's part of its world (:mod:`twin.cluster`),
    whose clock reads ``wall`` (Unix time, to follow the coordinator's anchors)."""
    scenario = (
        load_scenario(settings.scenario, allowed=settings.scenario_files) if settings.scenario else None
    )
    config, mode, speed = world_config(settings, scenario, wall_now)
    store = open_state(settings.state_dir) if settings.state_dir else Store()
    world = World(
        dataclasses.replace(config, slice=slice), store=store, kinds=kinds, record_trace=record_trace
    )
    real = settings.real_members(
        list(cameras_of(world)), scenario.real_members(os.environ) if scenario else {}
    )
    clock = SimClock(world, mode=mode, speed=speed, wall=wall)
    replays = scenario.replays() if scenario else {}  # members served from a recorded session
    journal = RequestJournal(world)
    site = Site(settings, world, clock, journal, real, replays, settings.rate_limit or host_rate_limit())
    made = [m for kind in kinds if kind.servers is not None for m in kind.servers(site)]
    served = {m.name: m for m in sorted(made, key=lambda m: m.rank)}
    faults = {name: site.fault_set(name) for name in served}
    limiters = {name: m.limiter for name, m in served.items()}
    for name, member in served.items():
        _front(member.app, faults[name], journal, name, clock)
    gateways = {name: m.backend for name, m in served.items() if m.kind == CAMERAS}
    control = TwinControl(
        world, clock, faults=faults, limiters=limiters, journal=journal, gateways=gateways,
        real={name: app.gate for name, app in _real(served, real).items()},
    )  # fmt: skip
    control_app = create_control_app(control, faults, limiters, journal=journal, actions=ACTIONS.describe())
    control_app.state.loop_watch = LoopWatch()  # started by POST /loop/reset
    bridge = _mqtt_bridge(settings, served[AUTOMATION]) if AUTOMATION in served else None
    twin = Twin(
        settings, world, clock, control, served, faults, control_app, bridge,
        journal=journal, members=real,
    )  # fmt: skip
    if (out := settings.publish_fleet) is not None:  # the simulated sensors on an outside broker
        source = twin.automation if bridge is not None else world  # a shard's world without the server
        twin.publisher = FleetPublisher(source, out.url, out.login, buffer=out.buffer, seed=world.seed)
        twin.publisher.client_id = slice.publisher_id if slice else twin.publisher.client_id
        twin.control_app.state.publisher = twin.publisher
    return twin


def _mqtt_bridge(settings: Settings, member: Served) -> MqttBridge:
    """The automation server's MQTT link: to the embedded broker, or to ``--mqtt-url``'s."""
    automation: TwinAutomation = member.backend
    if isinstance(member.app, FastAPI):
        member.app.state.ws_auth_timeout = settings.ws_auth_timeout
    mqtt_url = settings.mqtt_url or f"mqtt://127.0.0.1:{settings.mqtt_port}"
    listen = (settings.mqtt_host, settings.mqtt_port)
    bridge = MqttBridge(automation, mqtt_url, listen=listen, external_url=settings.mqtt_url)
    automation.mqtt_ready = lambda: bridge.connected
    automation.mqtt.require_login = settings.mqtt_require_login
    automation.mqtt.attach(bridge, DEVICE_FILTERS)
    return bridge


@dataclass
class Running:
    twin: Twin
    listeners: dict[str, Listener] = field(default_factory=dict)
    broker: EmbeddedBroker | None = None
    tasks: list[asyncio.Task] = field(default_factory=list)
    supervisor: asyncio.Task | None = None
    refused: list[str] = field(default_factory=list)  # real members that refused their credential at start
    control_token: str | None = None
    """The control plane's token, when it is bound beyond loopback (:mod:`api.control.guard`)."""
    fleet_broker: BrokerServer | None = None  # the broker twin run --fleet-broker started (it stops it)

    def url(self, name: str) -> str:
        return self.listeners[name].url

    def spawn(self, work: Coroutine, name: str) -> None:
        """A background task of the twin's, cancelled by :func:`stop`."""
        self.tasks.append(asyncio.create_task(work, name=name))


async def start(twin: Twin, cert_dir: Path, *, control: bool = True) -> Running:
    """Start everything; returns once every listener is bound. Raises ``OSError`` if one cannot bind.
    Without ``control`` the control plane is not served (a shard's: its coordinator serves one)."""
    running = Running(twin)
    try:
        await _start(running, cert_dir, control)
    except OSError:
        await stop(running)
        raise
    running.refused = await refused_credentials(twin.real, twin.members)
    return running


async def _start(running: Running, cert_dir: Path, serve_control: bool) -> None:
    twin, s, bridge = running.twin, running.twin.settings, running.twin.bridge
    if bridge is not None and s.mqtt_url is None:
        mqtt = twin.automation.mqtt  # on the stored configuration, if any; the link follows the broker
        running.broker = await bridge.start_broker(*mqtt.startup(), mqtt.auth)
        bridge.current = lambda: running.broker
    running.spawn(twin.clock.run(), "clock")
    if bridge is not None:
        running.spawn(bridge.run(), "mqtt-bridge")
    if twin.publisher is not None:
        running.spawn(twin.publisher.run(), "fleet-publisher")
    for member in twin.served.values():
        for name, work in member.tasks:
            running.spawn(work(), name)
    addresses = [a for m in twin.served.values() for a in m.addresses]
    hosts = {"localhost", "127.0.0.1", *(a.host for a in addresses if a.tls)}
    cert, key = write_self_signed(cert_dir, sorted(hosts))
    tls = (str(cert), str(key))
    timed = (s.header_timeout, s.idle_timeout)
    control_app, running.control_token = guarded(twin.control_app, s.control_host, s.state_dir, s.public_host)
    control_limits = limits.CONTROL.timed(*timed)
    control = Listener(
        "control", http.server(control_app, s.control_host, s.control_port, None, control_limits)
    )
    listeners = []
    for member in twin.served.values():
        kind = (limits.GO if member.kind == CAMERAS else limits.HYPER).timed(*timed)
        for a in member.addresses:
            server = http.server(member.app, a.host, a.port, tls if a.tls else None, kind)
            listeners.append(Listener(a.name, server, scheme="https" if a.tls else "http"))
        if member.rank == 0 and control not in listeners:
            listeners.append(control)
    if not serve_control:
        listeners = [listener for listener in listeners if listener is not control]
    elif control not in listeners:
        listeners.insert(0, control)
    running.listeners = {listener.name: listener for listener in listeners}
    await http.open_all(listeners)
    for member in twin.served.values():
        if member.rtsp is not None:
            port = await member.rtsp.start()
            if member.rtsp_port is not None:
                member.rtsp_port(port)
            await member.rtsp.reconcile()
    running.supervisor = asyncio.create_task(_supervise_power(running), name="gateway-power")


_POWER_EVENTS = (
    EventKind.CAMERA_POWER_DOWN,
    EventKind.CAMERA_POWER_UP,
    EventKind.CAMERA_BOOTED,
    EventKind.WORLD_RESET,
)


async def _supervise_power(running: Running) -> None:
    """A member that is down refuses connections like the real device: close its listeners when
    it powers down and re-bind them (same host and port) when it is up again."""
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
    for member in running.twin.served.values():
        up = member.powered() if member.powered is not None else None
        if up is None:
            continue  # a real member powers itself; one the world no longer has is left alone
        for address in member.addresses:
            listener = running.listeners.get(address.name)
            if listener is not None:
                await http.power(listener, up)


async def stop(running: Running) -> None:
    if running.supervisor is not None:
        running.supervisor.cancel()
        with contextlib.suppress(BaseException):
            await running.supervisor
    for rtsp in running.twin.rtsp.values():
        await rtsp.stop()
    await http.close_all(list(running.listeners.values()))
    for app in running.twin.real.values():
        await app.upstream.aclose()
    for member in running.twin.served.values():
        if member.close is not None:
            member.close()
    for task in running.tasks:
        task.cancel()
    for task in running.tasks:
        with contextlib.suppress(BaseException):
            await task
    if running.broker is not None:
        with contextlib.suppress(Exception):
            await running.broker.stop()
    running.twin.control_app.state.loop_watch.stop()
    running.twin.world.store.close()


def banner(running: Running) -> str:
    t = running.twin
    lines = [
        f"twin: seed {t.world.seed}, {len(sensors_of(t.world).by_device)} sensors, "
        f"{len(cameras_of(t.world))} cameras, clock {t.clock.mode.value} x{t.clock.speed:g}, "
        f"release {t.settings.release}"
    ]
    for member in t.served.values():
        if member.rank == 0:
            lines.append(_banner_line(running, member))
    lines.append(f"  control plane   {running.url('control')}{_token_note(running)}")
    if running.broker is not None:
        lines.append(f"  MQTT broker     mqtt://{t.settings.mqtt_host}:{running.broker.port}")
    if running.fleet_broker is not None:
        lines.append(f"  fleet broker    {running.fleet_broker.describe()}")
    for member in t.served.values():
        if member.rank != 0:
            lines.append(_banner_line(running, member))
        if member.rtsp is not None and member.rtsp.serving:
            lines.append(f"  {member.name} RTSP     {member.rtsp.url('main')}")
    return "\n".join(lines)


def _token_note(running: Running) -> str:
    if running.control_token is None:
        return ""
    state_dir = running.twin.settings.state_dir
    if state_dir is not None:
        return f"  (token in {state_dir / TOKEN_FILE})"
    return f"/?token={running.control_token}"


def _banner_line(running: Running, member: Served) -> str:
    urls = "  ".join(running.url(a.name) + a.path for a in member.addresses)
    return f"  {member.title}  {urls}" + (" (real)" if member.name in running.twin.real else "")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The twin's event loop: uvloop's (libuv), on which the HTTP servers answer about 7 % more
    requests per core-second than on asyncio's own (``python -m bench --only servers``); every
    listener, the world's clock driver and the handlers share it as they would share asyncio's."""
    return uvloop.new_event_loop()


def serve_forever(settings: Settings, on_start: Callable[[Running], object] | None = None) -> None:
    """:func:`serve` on the twin's own event loop, until SIGINT or SIGTERM."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(serve(settings, on_start))


def settle_heap() -> None:
    """Once everything is built: collect, then move every object alive now out of the collector's
    reach (``gc.freeze``). The world, the apps and the route tables live as long as the process; a
    full collection would otherwise walk all of them again, holding the event loop 50 to 150 ms
    every few seconds under load."""
    gc.collect()
    gc.freeze()


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
        settle_heap()
        log.info("%s", banner(running))
        try:
            await stop_requested.wait()
        finally:
            log.info("twin: shutting down")
            await stop(running)

"""What an installed app does on the camera while its container runs: the workload (inference
subscription, frames and detections, event topics, NDJSON log lines), health probes, and restarts
after the container ends under it (``twin.camera.app_health``).

A running app subscribes to the inference results its manifest names
(``permissions.inference.models`` and ``video``, or ``MODEL_ID``/``STREAM_ID`` in its env): a name
the device does not know is logged as ``NOT_FOUND``; without the camera service it runs in
simulation mode with zero detections. It subscribes to the event topics of ``SUBSCRIBE_TOPICS``
(comma separated): one its manifest does not declare is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import simpy

from hardware.ports.errors import DomainError, NotFound, Unavailable
from twin.camera import app_health
from twin.camera.container_records import Volume
from twin.camera.event_bus import covered

if TYPE_CHECKING:
    from twin.camera.ai_runtime import AiRuntime
    from twin.camera.app_manifest import Manifest
    from twin.camera.clock import DeviceClock
    from twin.camera.container_records import Container
    from twin.camera.containers import ContainerRuntime
    from twin.camera.durable import Durable
    from twin.camera.event_bus import DeviceEventBus
    from twin.camera.power import Power
    from twin.engine import Engine

TICK_S = 5.0
APPS_DIR = "/data/aipc/apps"
IDLE_LINE = "heartbeat: idle, no inference subscription"

LogWriter = Callable[["Container", str, str], None]
"""Writes one line of a container's log: (container, level, message)."""


def frame_line(frame: int, detections: int, camera_service: bool) -> str:
    return f"frame {frame}: detections={detections}{'' if camera_service else ' (simulation mode)'}"


@dataclass
class App:
    manifest: Manifest
    manifest_path: str
    installed_at: float
    state: str = "installed"
    started_at: float = 0.0
    stopped_at: float = 0.0
    restart_count: int = 0
    last_error: str = ""
    frames: int = 0
    subscribed: list[str] = field(default_factory=list)
    unhealthy: bool = False
    restarts_in_row: int = 0

    @property
    def id(self) -> str:
        return self.manifest.app_id

    @property
    def container_id(self) -> str:
        return f"aipc-{self.id}"

    @property
    def instance_path(self) -> str:
        return f"{APPS_DIR}/{self.id}"


class Installed(Protocol):
    """The app manager, as the running apps see it: the installed apps, where a change is written,
    and how an app is started again."""

    @property
    def apps(self) -> dict[str, App]: ...

    @property
    def durable(self) -> Durable: ...

    def begin_start(self, app_id: str, deadline: float | None = None) -> simpy.Event: ...


class AppRuntime:
    """The installed apps' behaviour while their containers run, and their restart policy."""

    def __init__(
        self,
        world: Engine,
        clock: DeviceClock,
        power: Power,
        containers: ContainerRuntime,
        events: DeviceEventBus,
        ai: AiRuntime,
        installed: Installed,
    ) -> None:
        self.env = world.env
        self.clock, self.power, self.containers, self.events, self.ai = clock, power, containers, events, ai
        self.installed = installed

    def container(self, app: App) -> Container:
        """The app's container, created from its manifest when it has none."""
        found = self.containers.containers.get(app.container_id)
        if found is not None:
            return found
        m = app.manifest
        return self.containers.create(
            app.container_id,
            m.image,
            app.id,
            volumes=[Volume(v.host, v.container, v.readonly) for v in m.volumes],
            env=m.env,
            cpu_limit=m.cpu,
            memory_limit=m.memory,
        )

    def container_exited(self, app_id: str, reason: str) -> None:
        """The app's container went away under it (killed, crashed, out of memory, unhealthy);
        its restart policy may bring it back."""
        app = self.installed.apps.get(app_id)
        if app is None or app.state != "running":
            return
        self.detach(app)
        app.state = "failed" if reason in app_health.RESTARTED_ON else "stopped"
        app.stopped_at, app.last_error = self.clock.now(), reason
        self.installed.durable.save()
        policy = app_health.restart_policy(app.manifest)
        if reason in app_health.RESTARTED_ON and policy.enabled:
            if policy.max_retries and app.restarts_in_row >= policy.max_retries:
                return
            app.restarts_in_row += 1
            self.env.process(self._restart_later(app, policy.delay_for(app.restarts_in_row)))

    def _restart_later(self, app: App, delay: float):
        yield self.env.timeout(delay)
        if self.installed.apps.get(app.id) is app and app.state == "failed" and self.power.powered:
            app.restart_count += 1
            self.installed.begin_start(app.id)

    def detach(self, app: App) -> None:
        """The app no longer runs: its inference and event subscriptions end."""
        self.ai.unsubscribe(app.id)
        for pattern in app.subscribed:
            self.events.unsubscribe(app.id, pattern)
        app.subscribed.clear()

    def _health(self, app: App, container: Container, probe: app_health.Probe):
        log = self.containers.log
        failures = 0
        while container.state == "running":
            yield self.env.timeout(probe.interval)
            if container.state != "running":
                return
            if not app.unhealthy:
                failures, app.restarts_in_row = 0, 0
                continue
            failures += 1
            log(container, "warning", f"{app_health.failure_text(probe)} ({failures}/{probe.retries})")
            if failures >= probe.retries:
                log(container, "error", "container is unhealthy: stopping it")
                self.containers.kill(container.id, reason="unhealthy")
                return

    # What a running app does ---------------------------------------------------------------
    def run(self, app: App, container: Container):
        """The app's workload in its container, a SimPy process body."""
        inference = self.begin(app, container, self.containers.log)
        yield from self.work(app, container, inference)

    def begin(self, app: App, container: Container, log: LogWriter) -> bool:
        """What the app does as it starts, its lines written with ``log``: subscribe to its model's
        inference results (True when it did) and its event topics, start its health probe."""
        m = app.manifest
        ai = self.ai
        log(container, "info", f"Starting {m.name} v{m.version}")
        model = container.env.get("MODEL_ID") or (m.models[0] if m.models else "")
        stream = container.env.get("STREAM_ID") or (m.video[0] if m.video else "main")
        inference = False
        if model:
            try:
                ai.subscribe(app.id, model, stream)
                inference = True
                log(container, "info", f"Subscribed to inference results of model {model} on stream {stream}")
            except NotFound as err:
                log(
                    container,
                    "error",
                    f"inference subscription failed: rpc error: code = NotFound desc = {err.message}",
                )
            except DomainError as err:
                log(container, "error", f"inference subscription failed: {err.message}")
        self._subscribe_topics(app, container, log)
        probe = app_health.probe_of(m)
        if probe is not None:
            self.env.process(self._health(app, container, probe))
        if inference and not ai.camera_service_running:
            log(container, "warning", "No video stream available, running in simulation mode")
        return inference

    def work(self, app: App, container: Container, inference: bool):
        """The app's frames, one every :data:`TICK_S`, a SimPy process body."""
        log = self.containers.log
        ai, bus = self.ai, self.events
        topic = f"app/{app.id}/detections"
        may_publish = covered(topic, app.manifest.publish)
        while True:
            yield self.env.timeout(TICK_S)
            if not inference:
                log(container, "info", IDLE_LINE)
                continue
            app.frames += 1
            count = ai.detections(app.id)
            log(container, "info", frame_line(app.frames, count, ai.camera_service_running))
            if may_publish:
                try:
                    bus.emit(
                        topic, {"app_id": app.id, "frame": app.frames, "detections": count}, source=app.id
                    )
                except Unavailable as err:
                    log(container, "error", f"event publish failed: {err.message}")

    def _subscribe_topics(self, app: App, container: Container, log: LogWriter) -> None:
        wanted = [t.strip() for t in container.env.get("SUBSCRIBE_TOPICS", "").split(",") if t.strip()]
        for topic in wanted:
            if not covered(topic, app.manifest.subscribe):
                log(
                    container,
                    "error",
                    f"event subscribe {topic} failed: permission denied: topic not declared in "
                    "permissions.events.subscribe",
                )
                continue
            try:
                self.events.subscribe(app.id, topic)
                app.subscribed.append(topic)
                log(container, "info", f"Subscribed to events {topic}")
            except Unavailable as err:
                log(container, "error", f"event subscribe {topic} failed: {err.message}")

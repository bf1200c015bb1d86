"""The world: one SimPy environment, its registries per model kind, random streams, bus and store.

``reset()`` re-runs the constructor (the constructor defines "empty"); ``snapshot()`` and
``restore()`` capture and rebuild clock, random states, entity state and durable state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import simpy

from hardware.ports.events import Event, EventKind
from twin.automation.agents import AgentRegistry
from twin.automation.apikeys import ApiKeyRing
from twin.automation.automations import AutomationRegistry
from twin.automation.brokers import ExternalBrokerRegistry
from twin.automation.chat_sessions import ChatRegistry
from twin.automation.components import ComponentStore
from twin.automation.dashboards import DashboardRegistry
from twin.automation.delivery import Outbox
from twin.automation.device_types import DeviceTypeRegistry
from twin.automation.extensions import ExtensionRegistry
from twin.automation.im_bridges import ImBridgeRegistry
from twin.automation.images import ImageStore
from twin.automation.ingest import Ingest
from twin.automation.instances import InstanceRegistry
from twin.automation.llm import ModelBackendRegistry
from twin.automation.market import Marketplace
from twin.automation.memory import SystemMemory
from twin.automation.memory_context import MemoryContext
from twin.automation.messages import MessageCenter
from twin.automation.mqtt_admin import BrokerSettings
from twin.automation.mqtt_inbound import Inbound
from twin.automation.push import DataPush
from twin.automation.registry import DeviceRegistry
from twin.automation.retention import Retention
from twin.automation.rules import RuleEngine
from twin.automation.server_log import ServerLog
from twin.automation.skills import SkillRegistry
from twin.automation.telemetry import Telemetry
from twin.automation.telemetry_stats import TelemetryStats
from twin.automation.users import UserDirectory
from twin.bus import EventBus
from twin.camera.camera import Camera
from twin.camera.keys import KeyRing
from twin.fleet import CameraSpec, WorldConfig
from twin.rng import Streams
from twin.sensors import Samples, SensorFleet, Window
from twin.store import Store


@dataclass(frozen=True, slots=True)
class WorldSnapshot:
    config: WorldConfig
    sim_time: float
    started_at: float
    streams: dict[str, dict]
    cameras: dict[str, dict[str, Any]]
    sensors: dict[str, float | None]
    sensor_windows: dict[str, list[Window]]
    database: bytes


class World:
    def __init__(
        self,
        config: WorldConfig | None = None,
        *,
        store: Store | None = None,
        bus: EventBus | None = None,
        keys: KeyRing | None = None,
        initial_time: float = 0.0,
        record_trace: bool = False,
    ) -> None:
        self.config = config or WorldConfig()
        self.seed = self.config.seed
        self.epoch = self.config.epoch
        self.env = simpy.Environment(initial_time=initial_time)
        self.started_at = initial_time
        self.store = store if store is not None else Store()
        self.streams = Streams(self.seed, self.store.generation)
        self.bus = bus if bus is not None else EventBus()
        self.keys = keys if keys is not None else KeyRing()
        self.trace: list[str] | None = [] if record_trace else None
        self.events_emitted = 0
        """World events since the world was built: each sensor sample counts, whether or not
        anyone asked for it as a single event."""
        self.observers: list[Callable[[Event], None]] = []
        """Called synchronously with every emitted event (the rules engine, data push, a scenario
        run), except the simulated sensors' ticks, which go to ``sample_observers`` as blocks."""
        self.sample_observers: list[Callable[[Samples], None]] = []
        """Called synchronously with every tick of a sensor group, as one block."""

        # Registries, one per model kind.
        self.sensors: dict[str, SensorFleet] = {}
        self.sensor_of: dict[str, SensorFleet] = {}
        for group in self.config.sensors:
            fleet = SensorFleet(self, group)
            self.sensors[group.device_type] = fleet
            self.sensor_of.update(dict.fromkeys(fleet.device_ids, fleet))
        self.cameras: dict[str, Camera] = {}
        self.camera_spec: dict[str, CameraSpec] = {}
        """Each camera's group: its boot profile and scene."""
        for i, (camera_id, spec) in enumerate(self.config.camera_specs()):
            self.camera_spec[camera_id] = spec
            self.cameras[camera_id] = Camera(self, camera_id, i + 1)
        # The order of construction is behaviour: registries start SimPy processes, draw from the
        # random streams and join the observers as they are built.
        self.users = UserDirectory(self)
        self.device_types = DeviceTypeRegistry(self, sensors=self.sensors)
        self.devices = DeviceRegistry(
            self, sensors=self.sensors, sensor_of=self.sensor_of, device_types=self.device_types
        )
        self.images = ImageStore(self)
        self.ingest = Ingest(
            self, devices=self.devices, device_types=self.device_types, sensor_of=self.sensor_of,
            images=self.images,
        )  # fmt: skip
        self.api_keys = ApiKeyRing(self)
        self.retention = Retention(self)
        # Telemetry's constructor only keeps its collaborators, so it may come after the retention
        # it queries (Retention starts its periodic job: it stays where it was).
        self.telemetry = Telemetry(self, devices=self.devices, retention=self.retention)
        self.telemetry_stats = TelemetryStats(self, sample_observers=self.sample_observers)
        self.llm = ModelBackendRegistry(self)
        self.agents = AgentRegistry(self, llm=self.llm, devices=self.devices)
        self.dashboards = DashboardRegistry(self, devices=self.devices)
        self.extensions = ExtensionRegistry(self)
        self.market = Marketplace(self, extensions=self.extensions, device_types=self.device_types)
        self.components = ComponentStore(self, market=self.market)
        self.outbox = Outbox(self)
        self.messages = MessageCenter(self, outbox=self.outbox)
        self.rules = RuleEngine(
            self,
            devices=self.devices,
            messages=self.messages,
            agents=lambda: getattr(self, "agents", None),  # read late: it may be swapped (tests)
            sample_observers=self.sample_observers,
        )
        self.push = DataPush(self, outbox=self.outbox, sample_observers=self.sample_observers)
        self.server_log = ServerLog(self)
        self.automations = AutomationRegistry(
            self, devices=self.devices, telemetry=self.telemetry, extensions=self.extensions,
            sample_observers=self.sample_observers,
        )  # fmt: skip
        self.instances = InstanceRegistry(self)
        self.chat = ChatRegistry(
            self, llm=self.llm, devices=self.devices, telemetry=self.telemetry, rules=self.rules
        )
        self.memory = SystemMemory(self)
        self.memory_context = MemoryContext(
            self, memory=self.memory, devices=self.devices, agents=self.agents,
            extensions=self.extensions, dashboards=self.dashboards, llm=self.llm, chat=self.chat,
        )  # fmt: skip
        self.skills = SkillRegistry(self)
        self.mqtt_broker = BrokerSettings(self)
        self.mqtt_inbound = Inbound(ingest=self.ingest, devices=self.devices)
        self.brokers = ExternalBrokerRegistry(self, inbound=self.mqtt_inbound)
        self.im_bridges = ImBridgeRegistry(self, agents=self.agents, outbox=self.outbox)

    # Time ----------------------------------------------------------------------------------
    def now(self) -> float:
        """Unix seconds on the world clock."""
        return self.epoch + self.env.now

    def uptime(self) -> float:
        return self.env.now - self.started_at

    # Events --------------------------------------------------------------------------------
    def emit(self, kind: EventKind, source: str, **data: Any) -> Event:
        self.events_emitted += 1
        event = Event(kind, self.env.now, source, data)
        if self.trace is not None:
            self.trace.append(event.trace_line())
        self.bus.publish(event)
        for observe in self.observers:
            observe(event)
        return event

    def emit_samples(self, samples: Samples) -> None:
        """A sensor group's tick. Single ``DEVICE_TELEMETRY`` events are made only when someone
        wants them (a bus subscriber or the trace); block observers see the tick after them."""
        self.events_emitted += samples.count
        trace = self.trace
        if trace is not None or self.bus.wants(EventKind.DEVICE_TELEMETRY):
            now, device_type = self.env.now, samples.fleet.group.device_type
            unix = self.epoch + samples.at
            publish = self.bus.publish
            for device_id, metrics in samples.rows():
                event = Event(
                    EventKind.DEVICE_TELEMETRY,
                    now,
                    device_id,
                    {"device_type": device_type, "timestamp": unix, "metrics": metrics},
                )
                if trace is not None:
                    trace.append(event.trace_line())
                publish(event)
        for observe in self.sample_observers:
            observe(samples)

    # Lifecycle -----------------------------------------------------------------------------
    def reset(self, config: WorldConfig | None = None) -> None:
        """Rebuild from the constructor: sim time 0, fresh streams, durable state wiped."""
        self.store.clear()
        self._rebuild(config or self.config, initial_time=0.0)
        self.emit(EventKind.WORLD_RESET, "world", seed=self.seed)

    def snapshot(self) -> WorldSnapshot:
        return WorldSnapshot(
            config=self.config,
            sim_time=self.env.now,
            started_at=self.started_at,
            streams=self.streams.state(),
            cameras={cid: cam.state() for cid, cam in self.cameras.items()},
            sensors={t: fleet.last_sample_at for t, fleet in self.sensors.items()},
            sensor_windows={t: list(fleet.windows) for t, fleet in self.sensors.items()},
            database=self.store.dump(),
        )

    def restore(self, snap: WorldSnapshot) -> None:
        self.store.load(snap.database)  # first: registries read their durable state when rebuilt
        self._rebuild(snap.config, initial_time=snap.sim_time)
        self.started_at = snap.started_at
        self.streams.set_state(snap.streams)
        for cid, state in snap.cameras.items():
            if cid in self.cameras:
                self.cameras[cid].set_state(state)
        for device_type, last in snap.sensors.items():
            if device_type in self.sensors:
                self.sensors[device_type].last_sample_at = last
        for device_type, windows in snap.sensor_windows.items():
            if device_type in self.sensors:
                self.sensors[device_type].restore_windows(windows)
        self.devices.rearm_outages()

    def _rebuild(self, config: WorldConfig, initial_time: float) -> None:
        self.__init__(  # type: ignore[misc]
            config,
            store=self.store,
            bus=self.bus,
            keys=self.keys,
            initial_time=initial_time,
            record_trace=self.trace is not None,
        )

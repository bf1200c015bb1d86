"""The automation server as a wing: one object that builds the server's registries on an engine.

The order of construction is behaviour: registries start SimPy processes, draw from the random
streams and join the observers as they are built.
"""

from __future__ import annotations

from hardware.ports.errors import Unavailable
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
from twin.automation.outages import DeviceOutages
from twin.automation.push import DataPush
from twin.automation.registry import DeviceRegistry
from twin.automation.retention import Retention
from twin.automation.rules import RuleEngine
from twin.automation.server_log import ServerLog
from twin.automation.skills import SkillRegistry
from twin.automation.telemetry import Telemetry
from twin.automation.telemetry_stats import TelemetryStats
from twin.automation.users import UserDirectory
from twin.engine import Host
from twin.sensors import SampleSink, SensorWing

AUTOMATION = "automation"
"""The automation server's kind name."""


class AutomationServer:
    """The automation server's registries, built on ``world`` over the simulated sensor groups
    (each simulated sensor is one of the server's devices)."""

    def __init__(self, world: SampleSink, sensors: SensorWing) -> None:
        self.users = UserDirectory(world)
        self.device_types = DeviceTypeRegistry(world, sensors=sensors.groups)
        self.devices = DeviceRegistry(
            world, sensors=sensors.groups, sensor_of=sensors.by_device, device_types=self.device_types
        )
        self.outages = DeviceOutages(world, devices=self.devices)
        self.images = ImageStore(world)
        self.ingest = Ingest(
            world, devices=self.devices, device_types=self.device_types, sensor_of=sensors.by_device,
            images=self.images,
        )  # fmt: skip
        self.api_keys = ApiKeyRing(world)
        self.retention = Retention(world)
        # Telemetry's constructor only keeps its collaborators, so it may come after the retention
        # it queries (Retention starts its periodic job: it stays where it was).
        self.telemetry_stats = TelemetryStats(world, sample_observers=world.sample_observers)
        self.telemetry = Telemetry(
            world, devices=self.devices, retention=self.retention, stats=self.telemetry_stats
        )
        self.llm = ModelBackendRegistry(world)
        self.agents = AgentRegistry(world, llm=self.llm, devices=self.devices)
        self.dashboards = DashboardRegistry(world, devices=self.devices)
        self.extensions = ExtensionRegistry(world)
        self.market = Marketplace(world, extensions=self.extensions, device_types=self.device_types)
        self.components = ComponentStore(world, market=self.market)
        self.outbox = Outbox(world)
        self.messages = MessageCenter(world, outbox=self.outbox)
        self.rules = RuleEngine(
            world,
            devices=self.devices,
            messages=self.messages,
            agents=lambda: getattr(self, "agents", None),  # read late: it may be swapped (tests)
            sample_observers=world.sample_observers,
        )
        self.push = DataPush(world, outbox=self.outbox, sample_observers=world.sample_observers)
        self.server_log = ServerLog(world)
        self.automations = AutomationRegistry(
            world, devices=self.devices, telemetry=self.telemetry, extensions=self.extensions,
            sample_observers=world.sample_observers,
        )  # fmt: skip
        self.instances = InstanceRegistry(world)
        self.chat = ChatRegistry(
            world, llm=self.llm, devices=self.devices, telemetry=self.telemetry, rules=self.rules
        )
        self.memory = SystemMemory(world)
        self.memory_context = MemoryContext(
            world, memory=self.memory, devices=self.devices, agents=self.agents,
            extensions=self.extensions, dashboards=self.dashboards, llm=self.llm, chat=self.chat,
        )  # fmt: skip
        self.skills = SkillRegistry(world)
        self.mqtt_broker = BrokerSettings(world)
        self.mqtt_inbound = Inbound(ingest=self.ingest, devices=self.devices)
        self.brokers = ExternalBrokerRegistry(world, inbound=self.mqtt_inbound)
        self.im_bridges = ImBridgeRegistry(world, agents=self.agents, outbox=self.outbox)

    def snapshot(self) -> None:
        """Nothing beyond the store: the server's state is durable."""

    def restore(self, state: None) -> None:
        self.outages.rearm()


def automation_of(world: Host) -> AutomationServer:
    """The automation server of ``world``."""
    wing = world.wings.get(AUTOMATION)
    if not isinstance(wing, AutomationServer):
        raise Unavailable("the world has no automation server")
    return wing

"""The twin's automation backend: the object the automation app receives, handing out the parts of
the world's automation server (looked up at each access: a reset or restore rebuilds them)."""

from __future__ import annotations

from collections.abc import Callable

from hardware.ports.admin import ServerLogs
from hardware.ports.automation import EventSource
from hardware.ports.data import Images, TelemetryStatistics
from hardware.ports.devices import AutomationDevices, DeviceIngest, DeviceTelemetry, DeviceTypes
from hardware.ports.events import EventKind
from hardware.ports.im_bridges import ImBridges
from hardware.ports.mqtt import MqttCredentials
from hardware.ports.types import Readiness
from hardware.ports.users import ApiKeys, Users
from twin.automation.agents import AgentRegistry
from twin.automation.automations import AutomationRegistry
from twin.automation.brokers import ExternalBrokerRegistry
from twin.automation.channel_filters import TwinChannelFilters
from twin.automation.chat import TwinChat
from twin.automation.components import ComponentStore
from twin.automation.config_io import TwinConfig
from twin.automation.dashboards import DashboardRegistry
from twin.automation.data_catalog import TwinData
from twin.automation.extensions import ExtensionRegistry
from twin.automation.im_router import ImRouter
from twin.automation.instances import InstanceRegistry
from twin.automation.llm import ModelBackendRegistry
from twin.automation.market import Marketplace
from twin.automation.memory import SystemMemory
from twin.automation.messages import MessageCenter
from twin.automation.mqtt_service import TwinMqtt
from twin.automation.onboarding import TwinOnboarding
from twin.automation.provisioning import TwinProvisioning
from twin.automation.push import DataPush
from twin.automation.rules import RuleEngine
from twin.automation.server import AutomationServer, automation_of
from twin.automation.skills import SkillRegistry
from twin.automation.suggestions import TwinSuggestions
from twin.automation.system import TwinSystem
from twin.clock import SimClock
from twin.world import World


class TwinAutomation:
    def __init__(self, world: World, clock: SimClock) -> None:
        self.world = world
        self.clock = clock
        self.system = TwinSystem(world)
        self.chat = TwinChat(lambda: self._server.chat, clock)
        self.onboarding = TwinOnboarding(world)
        self.suggestions = TwinSuggestions(world)
        self.admin = TwinConfig(world, self.onboarding)
        self.data = TwinData(world)
        self.provisioning = TwinProvisioning(world)
        self.channel_filters = TwinChannelFilters(world)
        self.mqtt_ready: Callable[[], bool] = lambda: False
        """Whether the MQTT side is connected; the composition root wires it to the bridge."""
        self.mqtt = TwinMqtt(world)
        self._im_router: ImRouter | None = None

    @property
    def _server(self) -> AutomationServer:
        """The current world's automation server (a reset or restore builds a new one)."""
        return automation_of(self.world)

    @property
    def devices(self) -> AutomationDevices:
        return self._server.devices

    @property
    def device_types(self) -> DeviceTypes:
        return self._server.device_types

    @property
    def ingest(self) -> DeviceIngest:
        return self._server.ingest

    @property
    def telemetry(self) -> DeviceTelemetry:
        return self._server.telemetry

    @property
    def telemetry_stats(self) -> TelemetryStatistics:
        return self._server.telemetry_stats

    @property
    def images(self) -> Images:
        return self._server.images

    @property
    def server_log(self) -> ServerLogs:
        return self._server.server_log

    @property
    def rules(self) -> RuleEngine:
        return self._server.rules

    @property
    def messages(self) -> MessageCenter:
        return self._server.messages

    @property
    def push(self) -> DataPush:
        return self._server.push

    @property
    def agents(self) -> AgentRegistry:
        return self._server.agents

    @property
    def llm_backends(self) -> ModelBackendRegistry:
        return self._server.llm

    @property
    def dashboards(self) -> DashboardRegistry:
        return self._server.dashboards

    @property
    def extensions(self) -> ExtensionRegistry:
        return self._server.extensions

    @property
    def market(self) -> Marketplace:
        return self._server.market

    @property
    def components(self) -> ComponentStore:
        return self._server.components

    @property
    def automations(self) -> AutomationRegistry:
        return self._server.automations

    @property
    def instances(self) -> InstanceRegistry:
        return self._server.instances

    @property
    def memory(self) -> SystemMemory:
        return self._server.memory

    @property
    def skills(self) -> SkillRegistry:
        return self._server.skills

    @property
    def brokers(self) -> ExternalBrokerRegistry:
        return self._server.brokers

    @property
    def mqtt_credentials(self) -> MqttCredentials:
        return self.mqtt.settings

    @property
    def im_router(self) -> ImRouter:
        """The router following the current world's IM bridges (a rebuilt world gets a new one)."""
        self._im_router = ImRouter.following(self._im_router, self._server.im_bridges, self.chat)
        return self._im_router

    @property
    def im_bridges(self) -> ImBridges:
        return self.im_router.registry

    @property
    def users(self) -> Users:
        return self._server.users

    @property
    def api_keys(self) -> ApiKeys:
        return self._server.api_keys

    @property
    def bus(self) -> EventSource:
        return self.world.bus

    def uptime(self) -> float:
        return self.world.env.now - self.world.started_at

    def readiness(self) -> Readiness:
        # The built-in simulated model backend is always there, so the LLM dependency is ready.
        return Readiness(database=self.world.store.healthy(), mqtt=bool(self.mqtt_ready()), llm=True)

    def publish_event(self, event_type: str, data: object, source: str) -> None:
        now = int(self.world.now())
        self.world.emit(EventKind.CUSTOM, source, custom_type=event_type, data=data, timestamp=now)

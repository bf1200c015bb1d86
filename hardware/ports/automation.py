"""What the automation backend API needs from whatever serves it (the twin, or a real server)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hardware.ports.admin import Administration, ServerLogs
from hardware.ports.agents import AutomationAgents
from hardware.ports.automations import Automations, Instances
from hardware.ports.channel_filters import ChannelFilters
from hardware.ports.chat import ChatSessions
from hardware.ports.clock import Clock
from hardware.ports.dashboards import Dashboards
from hardware.ports.data import DataCatalog, Images, TelemetryStatistics
from hardware.ports.devices import AutomationDevices, DeviceIngest, DeviceTelemetry, DeviceTypes
from hardware.ports.events import EventKind, Subscription
from hardware.ports.extensions import Extensions
from hardware.ports.guidance import Onboarding, Suggestions
from hardware.ports.im_bridges import ImBridges
from hardware.ports.llm_backends import ModelBackends
from hardware.ports.market import Components, Market
from hardware.ports.memory import Memory, Skills
from hardware.ports.mqtt import ExternalBrokers, MqttAdmin, MqttCredentials
from hardware.ports.provisioning import Provisioning
from hardware.ports.rules import AutomationMessages, AutomationPush, AutomationRules
from hardware.ports.system import AutomationSystem
from hardware.ports.types import Readiness
from hardware.ports.users import ApiKeys, Users


class EventSource(Protocol):
    def subscribe(self, kinds: frozenset[EventKind] | None = None, maxlen: int = 1024) -> Subscription:
        """Events of the given kinds (all when ``None``) on a bounded queue that drops the oldest."""


@runtime_checkable
class AutomationBackend(Protocol):
    """What the automation app is handed: the parts it routes to, each a read-only member (the
    twin looks the current part up at each access, since a reset or restore rebuilds them)."""

    @property
    def clock(self) -> Clock: ...

    @property
    def devices(self) -> AutomationDevices: ...

    @property
    def device_types(self) -> DeviceTypes: ...

    @property
    def ingest(self) -> DeviceIngest: ...

    @property
    def telemetry(self) -> DeviceTelemetry: ...

    @property
    def system(self) -> AutomationSystem: ...

    @property
    def agents(self) -> AutomationAgents: ...

    @property
    def llm_backends(self) -> ModelBackends: ...

    @property
    def dashboards(self) -> Dashboards: ...

    @property
    def extensions(self) -> Extensions: ...

    @property
    def rules(self) -> AutomationRules: ...

    @property
    def messages(self) -> AutomationMessages: ...

    @property
    def push(self) -> AutomationPush: ...

    @property
    def market(self) -> Market: ...

    @property
    def components(self) -> Components: ...

    @property
    def onboarding(self) -> Onboarding: ...

    @property
    def suggestions(self) -> Suggestions: ...

    @property
    def admin(self) -> Administration: ...

    @property
    def server_log(self) -> ServerLogs: ...

    @property
    def data(self) -> DataCatalog: ...

    @property
    def telemetry_stats(self) -> TelemetryStatistics: ...

    @property
    def images(self) -> Images: ...

    @property
    def provisioning(self) -> Provisioning: ...

    @property
    def channel_filters(self) -> ChannelFilters: ...

    @property
    def automations(self) -> Automations: ...

    @property
    def instances(self) -> Instances: ...

    @property
    def chat(self) -> ChatSessions: ...

    @property
    def mqtt(self) -> MqttAdmin: ...

    @property
    def mqtt_credentials(self) -> MqttCredentials: ...

    @property
    def brokers(self) -> ExternalBrokers: ...

    @property
    def im_bridges(self) -> ImBridges: ...

    @property
    def memory(self) -> Memory: ...

    @property
    def skills(self) -> Skills: ...

    @property
    def users(self) -> Users: ...

    @property
    def api_keys(self) -> ApiKeys: ...

    @property
    def bus(self) -> EventSource:
        """The world's events, for the WebSocket and SSE streams and the MQTT bridge."""

    def uptime(self) -> float:
        """Seconds of world time since the server started."""

    def readiness(self) -> Readiness: ...

    def publish_event(self, event_type: str, data: object, source: str) -> None:
        """A client's own event (``POST /events``): a ``custom`` event on the bus."""

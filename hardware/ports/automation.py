"""What the automation backend API needs from whatever serves it (the twin, or a real server)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hardware.ports.admin import Administration
from hardware.ports.agents import AutomationAgents
from hardware.ports.automations import Automations, Instances
from hardware.ports.channel_filters import ChannelFilters
from hardware.ports.chat import ChatSessions
from hardware.ports.clock import Clock
from hardware.ports.dashboards import Dashboards
from hardware.ports.data import DataCatalog
from hardware.ports.devices import AutomationDevices
from hardware.ports.events import EventKind, Subscription
from hardware.ports.extensions import Extensions
from hardware.ports.guidance import Onboarding, Suggestions
from hardware.ports.im_bridges import ImBridges
from hardware.ports.llm_backends import ModelBackends
from hardware.ports.market import Components, Market
from hardware.ports.memory import Memory, Skills
from hardware.ports.mqtt import ExternalBrokers, MqttAdmin
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
    clock: Clock
    devices: AutomationDevices
    system: AutomationSystem
    agents: AutomationAgents
    llm_backends: ModelBackends
    dashboards: Dashboards
    extensions: Extensions
    rules: AutomationRules
    messages: AutomationMessages
    push: AutomationPush
    market: Market
    components: Components
    onboarding: Onboarding
    suggestions: Suggestions
    admin: Administration
    data: DataCatalog
    provisioning: Provisioning
    channel_filters: ChannelFilters
    automations: Automations
    instances: Instances
    chat: ChatSessions
    mqtt: MqttAdmin
    brokers: ExternalBrokers
    im_bridges: ImBridges
    memory: Memory
    skills: Skills

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

"""The twin's implementation of the automation backend port, over the world."""

from __future__ import annotations

from collections.abc import Callable

from hardware.ports.events import EventKind, Subscription
from hardware.ports.types import ApiKey, Login, Readiness, User
from twin.automation.agents import AgentRegistry
from twin.automation.automations import AutomationRegistry
from twin.automation.brokers import ExternalBrokerRegistry
from twin.automation.channel_filters import TwinChannelFilters
from twin.automation.chat import TwinChat
from twin.automation.components import ComponentStore
from twin.automation.config_io import TwinConfig
from twin.automation.dashboards import DashboardRegistry
from twin.automation.data_catalog import TwinData
from twin.automation.devices import TwinDevices
from twin.automation.extensions import ExtensionRegistry
from twin.automation.im_router import TwinImBridges, im_front
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
from twin.automation.skills import SkillRegistry
from twin.automation.suggestions import TwinSuggestions
from twin.automation.system import TwinSystem
from twin.clock import SimClock
from twin.world import World


class TwinAutomation:
    def __init__(self, world: World, clock: SimClock) -> None:
        self.world = world
        self.clock = clock
        self.devices = TwinDevices(world)
        self.system = TwinSystem(world)
        self.chat = TwinChat(lambda: self.world.chat, clock)
        self.onboarding = TwinOnboarding(world)
        self.suggestions = TwinSuggestions(world)
        self.admin = TwinConfig(world, self.onboarding)
        self.data = TwinData(world)
        self.provisioning = TwinProvisioning(world)
        self.channel_filters = TwinChannelFilters(world)
        self.mqtt_ready: Callable[[], bool] = lambda: False
        """Whether the MQTT side is connected; the composition root wires it to the bridge."""
        self.mqtt = TwinMqtt(world)
        self._im_bridges: TwinImBridges | None = None

    @property
    def rules(self) -> RuleEngine:
        return self.world.rules

    @property
    def messages(self) -> MessageCenter:
        return self.world.messages

    @property
    def push(self) -> DataPush:
        return self.world.push

    # The acting areas are the world's registries, looked up on each access (reset rebuilds them).
    @property
    def agents(self) -> AgentRegistry:
        return self.world.agents

    @property
    def llm_backends(self) -> ModelBackendRegistry:
        return self.world.llm

    @property
    def dashboards(self) -> DashboardRegistry:
        return self.world.dashboards

    @property
    def extensions(self) -> ExtensionRegistry:
        return self.world.extensions

    @property
    def market(self) -> Marketplace:
        return self.world.market

    @property
    def components(self) -> ComponentStore:
        return self.world.components

    @property
    def automations(self) -> AutomationRegistry:
        return self.world.automations

    @property
    def instances(self) -> InstanceRegistry:
        return self.world.instances

    @property
    def memory(self) -> SystemMemory:
        return self.world.memory

    @property
    def skills(self) -> SkillRegistry:
        return self.world.skills

    @property
    def brokers(self) -> ExternalBrokerRegistry:
        return self.world.brokers

    @property
    def im_bridges(self) -> TwinImBridges:
        self._im_bridges = im_front(self._im_bridges, self.world.im_bridges, self.chat)
        return self._im_bridges

    def uptime(self) -> float:
        return self.world.uptime()

    def readiness(self) -> Readiness:
        # The built-in simulated model backend is always there, so the LLM dependency is ready.
        return Readiness(database=self.world.store.healthy(), mqtt=bool(self.mqtt_ready()), llm=True)

    def setup_required(self) -> bool:
        return self.world.users.setup_required()

    def initialize(self, username: str, password: str, email: str | None = None) -> Login:
        return self.world.users.initialize(username, password, email)

    def login(self, username: str, password: str) -> Login:
        return self.world.users.login(username, password)

    def authenticate(self, token: str) -> User:
        return self.world.users.authenticate(token)

    def logout(self, token: str) -> None:
        self.world.users.logout(token)

    def authenticate_key(self, key: str) -> ApiKey:
        return self.world.api_keys.authenticate(key)

    def registration_enabled(self) -> bool:
        return self.world.users.registration_enabled()

    def set_registration(self, enabled: bool) -> None:
        self.world.users.set_registration(enabled)

    def register(self, username: str, password: str, *, earlier_release: bool = False) -> Login:
        return self.world.users.register(username, password, earlier_release=earlier_release)

    def change_password(self, user: User, old_password: str, new_password: str) -> None:
        self.world.users.change_password(user, old_password, new_password)

    def list_users(self) -> list[User]:
        return self.world.users.list()

    def add_user(self, username: str, password: str, role: str) -> User:
        return self.world.users.add(username, password, role)

    def remove_user(self, username: str, actor: User) -> None:
        self.world.users.remove(username, actor)

    def create_api_key(
        self, name: str, permissions: list[str] | None = None, expires_at: int | None = None
    ) -> tuple[str, ApiKey]:
        return self.world.api_keys.create(name, permissions, expires_at)

    def list_api_keys(self) -> list[ApiKey]:
        return self.world.api_keys.list()

    def delete_api_key(self, key_id: str) -> bool:
        return self.world.api_keys.delete(key_id)

    def api_key_status(self) -> tuple[int, bool]:
        return self.world.api_keys.status()

    def subscribe(self, kinds: frozenset[EventKind] | None = None, maxlen: int = 1024) -> Subscription:
        return self.world.bus.subscribe(kinds, maxlen)

    def publish_event(self, event_type: str, data: object, source: str) -> None:
        now = int(self.world.now())
        self.world.emit(EventKind.CUSTOM, source, custom_type=event_type, data=data, timestamp=now)

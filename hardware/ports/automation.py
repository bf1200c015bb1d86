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
from hardware.ports.types import ApiKey, Login, Readiness, User


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

    def uptime(self) -> float:
        """Seconds of world time since the server started."""

    def readiness(self) -> Readiness: ...

    def setup_required(self) -> bool:
        """True while no user exists."""

    def initialize(self, username: str, password: str, email: str | None = None) -> Login:
        """Create the first administrator and log it in.

        Raises ``Conflict`` once any user exists and ``InvalidInput`` (with ``field``) for a bad
        username, email or password.
        """

    def login(self, username: str, password: str) -> Login:
        """Raises ``Unauthenticated`` for bad credentials."""

    def authenticate(self, token: str) -> User:
        """The user a session token belongs to; ``Unauthenticated`` (expired, revoked, bad) otherwise."""

    def logout(self, token: str) -> None: ...

    def authenticate_key(self, key: str) -> ApiKey:
        """The API key ``key`` names; ``Unauthenticated`` when unknown, inactive or expired."""

    def registration_enabled(self) -> bool: ...

    def set_registration(self, enabled: bool) -> None: ...

    def register(self, username: str, password: str, *, earlier_release: bool = False) -> Login:
        """Self-service sign-up with the regular role; ``Forbidden`` while registration is disabled.
        ``earlier_release``: registration is open and the first registrant becomes administrator."""

    def change_password(self, user: User, old_password: str, new_password: str) -> None: ...

    def list_users(self) -> list[User]: ...

    def add_user(self, username: str, password: str, role: str) -> User: ...

    def remove_user(self, username: str, actor: User) -> None: ...

    def create_api_key(
        self, name: str, permissions: list[str] | None = None, expires_at: int | None = None
    ) -> tuple[str, ApiKey]:
        """A new key: the raw secret (shown once) and its stored description."""

    def list_api_keys(self) -> list[ApiKey]: ...

    def delete_api_key(self, key_id: str) -> bool: ...

    def api_key_status(self) -> tuple[int, bool]:
        """(number of keys, whether the operator's default key exists)."""

    def subscribe(self, kinds: frozenset[EventKind] | None = None, maxlen: int = 1024) -> Subscription:
        """Events of the given kinds (all when ``None``) on a bounded queue that drops the oldest."""

    def publish_event(self, event_type: str, data: object, source: str) -> None:
        """A client's own event (``POST /events``): a ``custom`` event on the bus."""

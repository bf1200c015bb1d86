"""The twin's implementation of the automation backend port, over the world."""

from __future__ import annotations

from hardware.ports.events import EventKind, Subscription
from hardware.ports.types import Login, Readiness, User
from twin.automation.devices import TwinDevices
from twin.clock import SimClock
from twin.world import World


class TwinAutomation:
    def __init__(self, world: World, clock: SimClock, *, mqtt_ready=lambda: True) -> None:
        self.world = world
        self.clock = clock
        self.devices = TwinDevices(world)
        self._mqtt_ready = mqtt_ready

    def uptime(self) -> float:
        return self.world.uptime()

    def readiness(self) -> Readiness:
        # The built-in simulated model backend is always there, so the LLM dependency is ready.
        return Readiness(database=self.world.store.healthy(), mqtt=bool(self._mqtt_ready()), llm=True)

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

    def subscribe(self, kinds: frozenset[EventKind] | None = None, maxlen: int = 1024) -> Subscription:
        return self.world.bus.subscribe(kinds, maxlen)

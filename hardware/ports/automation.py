"""What the automation backend API needs from whatever serves it (the twin, or a real server)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hardware.ports.clock import Clock
from hardware.ports.devices import AutomationDevices
from hardware.ports.events import EventKind, Subscription
from hardware.ports.types import Login, Readiness, User


@runtime_checkable
class AutomationBackend(Protocol):
    clock: Clock
    devices: AutomationDevices

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

    def subscribe(self, kinds: frozenset[EventKind] | None = None, maxlen: int = 1024) -> Subscription:
        """Events of the given kinds (all when ``None``) on a bounded queue that drops the oldest."""

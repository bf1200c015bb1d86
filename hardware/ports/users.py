"""The automation server's accounts: its users (sessions, sign-up, setup) and its API keys."""

from __future__ import annotations

from typing import Protocol

from hardware.ports.types import ApiKey, Login, User


class Users(Protocol):
    def setup_required(self) -> bool:
        """True while no user exists."""

    def initialize(self, username: str, password: str, email: str | None) -> Login:
        """Create the first administrator and log it in.

        Raises ``Conflict`` once any user exists and ``InvalidInput`` (with ``field``) for a bad
        username, email or password.
        """

    def login(self, username: str, password: str) -> Login:
        """Raises ``Unauthenticated`` for bad credentials."""

    def authenticate(self, token: str) -> User:
        """The user a session token belongs to; ``Unauthenticated`` (expired, revoked, bad) otherwise."""

    def logout(self, token: str) -> None: ...

    def registration_enabled(self) -> bool: ...

    def set_registration(self, enabled: bool) -> None: ...

    def register(self, username: str, password: str, *, earlier_release: bool = False) -> Login:
        """Self-service sign-up with the regular role; ``Forbidden`` while registration is disabled.
        ``earlier_release``: registration is open and the first registrant becomes administrator."""

    def change_password(self, user: User, old: str, new: str) -> None: ...

    def list(self) -> list[User]: ...

    def add(self, username: str, password: str, role: str) -> User: ...

    def remove(self, username: str, actor: User) -> None: ...


class ApiKeys(Protocol):
    def authenticate(self, raw: str) -> ApiKey:
        """The API key ``raw`` names; ``Unauthenticated`` when unknown, inactive or expired."""

    def create(
        self, name: str, permissions: list[str] | None = None, expires_at: int | None = None
    ) -> tuple[str, ApiKey]:
        """A new key: the raw secret (shown once) and its stored description."""

    def list(self) -> list[ApiKey]: ...

    def delete(self, key_id: str) -> bool: ...

    def status(self) -> tuple[int, bool]:
        """(number of keys, whether the operator's default key exists)."""

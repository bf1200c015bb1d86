"""What the edge gateway API needs from one camera (simulated, or a real device behind a passthrough).

The gateway is split per area as later issues add them (system, ai, apps, containers, media,
peripherals, files, logs, monitor, events); ``GatewayBackend`` composes the areas.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hardware.ports.clock import Clock
from hardware.ports.media import GatewayMedia
from hardware.ports.types import GatewayInfo, PublicKey


@runtime_checkable
class GatewayAuth(Protocol):
    def public_key(self) -> PublicKey:
        """The device's RSA-2048 public key and its current time."""

    def login(self, username: str, password: str, timestamp: int) -> str:
        """Check credentials and open a session; returns the raw session token.

        ``password`` is base64 RSA-PKCS#1 v1.5 ciphertext or plaintext. A non-zero ``timestamp``
        more than five minutes from device time raises ``TimestampSkew``; bad credentials raise
        ``Unauthenticated``.
        """

    def logout(self, token: str) -> bool:
        """Drop the session; idempotent. True if a session was dropped."""

    def check_token(self, token: str) -> str:
        """The username the token belongs to; ``Unauthenticated`` otherwise."""


@runtime_checkable
class GatewaySystem(Protocol):
    def info(self) -> GatewayInfo: ...

    def reachable(self) -> bool:
        """False while the device is down (booting, powered off): the API then refuses connections."""


@runtime_checkable
class GatewayBackend(Protocol):
    id: str
    clock: Clock
    auth: GatewayAuth
    system: GatewaySystem
    media: GatewayMedia

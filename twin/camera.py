"""An AI camera: its device-side state (power, sessions, credentials). Optics, video and the
device's services grow in their own modules; this one is the device as its gateway sees it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric import padding

from hardware.ports.errors import InvalidInput, TimestampSkew, Unauthenticated
from hardware.ports.events import EventKind
from hardware.ports.types import GatewayInfo, PublicKey

if TYPE_CHECKING:
    from twin.world import World

FIRMWARE_VERSION = "0.1.0"
TIMESTAMP_WINDOW_S = 300
SERVICES = ("ai-runtime", "event-bus", "device-control", "app-manager")


def _token_digest(token: str) -> str:
    token = token.removeprefix("Bearer ").strip()
    return hashlib.sha256(token.encode()).hexdigest()


class Camera:
    def __init__(self, world: World, camera_id: str, index: int) -> None:
        self.world = world
        self.id = camera_id
        self.index = index
        self.username = world.config.gateway_username
        self.password = world.config.gateway_password
        self.powered = True
        self._sessions: dict[str, str] = {}
        world.emit(EventKind.CAMERA_BOOTED, camera_id, index=index)

    # Auth ----------------------------------------------------------------------------------
    def public_key(self) -> PublicKey:
        return PublicKey(
            pem=self.world.keys.public_pem(self.id),
            algorithm="RSA-2048/PKCS1v15",
            unix_timestamp=int(self.world.now()),
        )

    def decrypt_password(self, value: str) -> str:
        """Lenient like the device: anything that is not valid ciphertext is plaintext."""
        try:
            raw = base64.b64decode(value, validate=True)
            plain = self.world.keys.rsa_key(self.id).decrypt(raw, padding.PKCS1v15())
            return plain.decode()
        except (ValueError, TypeError, UnicodeDecodeError):
            return value

    def login(self, username: str, password: str, timestamp: int) -> str:
        if not username or not password:
            raise InvalidInput("Invalid input format")
        if timestamp and abs(timestamp - self.world.now()) > TIMESTAMP_WINDOW_S:
            raise TimestampSkew("Request timestamp out of allowed window")
        plain = self.decrypt_password(password)
        ok_user = hmac.compare_digest(username.encode(), self.username.encode())
        ok_pass = hmac.compare_digest(plain.encode(), self.password.encode())
        if not (ok_user and ok_pass):
            raise Unauthenticated("Invalid username or password")
        token = secrets.token_urlsafe(32)
        self._sessions[_token_digest(token)] = username
        self.world.emit(EventKind.CAMERA_SESSION_OPENED, self.id, username=username)
        return token

    def logout(self, token: str) -> bool:
        return self._sessions.pop(_token_digest(token), None) is not None

    def check_token(self, token: str) -> str:
        username = self._sessions.get(_token_digest(token)) if token else None
        if username is None:
            raise Unauthenticated("Invalid or missing authentication token")
        return username

    def drop_sessions(self, reason: str) -> None:
        count = len(self._sessions)
        self._sessions.clear()
        self.world.emit(EventKind.CAMERA_SESSIONS_DROPPED, self.id, reason=reason, count=count)

    # System --------------------------------------------------------------------------------
    def info(self) -> GatewayInfo:
        return GatewayInfo(version=FIRMWARE_VERSION, services=dict.fromkeys(SERVICES, True))

    # Snapshot ------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"password": self.password, "powered": self.powered, "sessions": dict(self._sessions)}

    def set_state(self, state: dict[str, Any]) -> None:
        self.password = state["password"]
        self.powered = state["powered"]
        self._sessions = dict(state["sessions"])

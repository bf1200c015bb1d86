"""An AI camera: its device-side state (power, sessions, credentials, clock). Optics, video and the
device's services grow in their own modules; this one is the device as its gateway sees it.

Power is a timed state machine on the world clock: ``up → (restart, RESTART_DELAY_S) → down →
(BOOT_S) → up``. Going down drops every session and emits ``CAMERA_POWER_DOWN`` (the composition
root closes the camera's listeners on it); coming up emits ``CAMERA_POWER_UP``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric import padding

from hardware.ports.errors import InvalidInput, TimestampSkew, Unauthenticated
from hardware.ports.events import EventKind
from hardware.ports.types import DeviceTime, GatewayInfo, OtaStatus, PublicKey, SystemStats
from twin.camera import platform_state
from twin.camera.admin import DeviceAdmin
from twin.camera.ai_runtime import AiRuntime
from twin.camera.apps import AppManager
from twin.camera.clock import DeviceClock
from twin.camera.containers import ContainerRuntime
from twin.camera.event_bus import DeviceEventBus
from twin.camera.fs import seeded
from twin.camera.lens import Lens
from twin.camera.logs import DeviceLogs
from twin.camera.monitor import Monitor
from twin.camera.os_upgrade import OsUpgrade
from twin.camera.ota import Ota
from twin.camera.peripherals import Peripherals
from twin.camera.stats import accelerator_stats
from twin.camera.storage import Storage

if TYPE_CHECKING:
    from twin.world import World

FIRMWARE_VERSION = "0.1.0"
TIMESTAMP_WINDOW_S = 300
SERVICES = ("ai-runtime", "event-bus", "device-control", "app-manager")
RESTART_DELAY_S = 2.0
"""The device answers a reboot or password change, then acts on it this much later."""
BOOT_S = 40.0
"""From power-down to a listening gateway again: kernel, services, platform-api."""
PASSWORD_MIN, PASSWORD_MAX = 8, 32


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
        self.boot_count = 0
        self.booted_at = world.env.now
        self.down_until: float | None = None
        self._restart_pending = False
        self._sessions: dict[str, str] = {}
        self.clock = DeviceClock(world, camera_id)
        self.storage = Storage(world, camera_id)
        self.events, self.ai = DeviceEventBus(world, camera_id), AiRuntime(self)
        self.containers, self.apps, self.monitor = ContainerRuntime(self), AppManager(self), Monitor(self)
        self.admin = DeviceAdmin(self)
        self.lens = Lens(world, camera_id)
        self.peripherals = Peripherals(self)
        self.fs = seeded(self.clock.now, camera_id, f"{world.seed}/{camera_id}", self.storage, world.store)
        self.logs = DeviceLogs(self)
        self.ota = Ota(self)
        self.os_upgrade = OsUpgrade(self)
        world.emit(EventKind.CAMERA_BOOTED, camera_id, index=index)

    # Auth ----------------------------------------------------------------------------------
    def public_key(self) -> PublicKey:
        return PublicKey(
            pem=self.world.keys.public_pem(self.id),
            algorithm="RSA-2048/PKCS1v15",
            unix_timestamp=int(self.clock.now()),
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
        if timestamp and abs(timestamp - self.clock.now()) > TIMESTAMP_WINDOW_S:
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

    def change_password(self, old: str, new: str, timestamp: int) -> None:
        """Checks in the device's order: timestamp, new length, old password. On success the
        service restarts ``RESTART_DELAY_S`` later, which drops every session."""
        if timestamp and abs(timestamp - self.clock.now()) > TIMESTAMP_WINDOW_S:
            raise TimestampSkew("Request timestamp out of allowed window")
        plain_new = self.decrypt_password(new)
        if not PASSWORD_MIN <= len(plain_new.encode()) <= PASSWORD_MAX:
            raise InvalidInput("Password length must be 8-32", resource="parameter")
        if old and not hmac.compare_digest(self.decrypt_password(old).encode(), self.password.encode()):
            raise InvalidInput("Incorrect old password")
        self.password = plain_new
        self.world.emit(EventKind.CAMERA_PASSWORD_CHANGED, self.id)
        self.world.env.process(self._service_restart())

    def _service_restart(self):
        yield self.world.env.timeout(RESTART_DELAY_S)
        self.drop_sessions("password_change")

    # Power ---------------------------------------------------------------------------------
    def restart(self, delay: float = RESTART_DELAY_S, reason: str = "reboot") -> None:
        """Reboot ``delay`` from now (an OTA's deploy script, a power cut: 0); a second request
        while one is pending is a no-op."""
        if self._restart_pending or not self.powered:
            return
        self._restart_pending = True
        self.world.env.process(self._reboot(delay, reason))

    def _reboot(self, delay: float = RESTART_DELAY_S, reason: str = "reboot"):
        yield self.world.env.timeout(delay)
        self._restart_pending = False
        self.powered = False
        self.down_until = self.world.env.now + BOOT_S
        self.drop_sessions(reason)
        self.logs.power_down()
        self.apps.power_down()
        self.world.emit(EventKind.CAMERA_POWER_DOWN, self.id, reason=reason)
        yield from self._boot(BOOT_S)

    def _boot(self, duration: float):
        yield self.world.env.timeout(duration)
        self.powered = True
        self.down_until = None
        self.boot_count += 1
        self.booted_at = self.world.env.now
        self.apps.power_up()
        self.world.emit(EventKind.CAMERA_POWER_UP, self.id, boot=self.boot_count)

    def uptime(self) -> float:
        return self.world.env.now - self.booted_at

    def boot_id(self) -> str:
        """The kernel's random boot id: a UUID per (seed, camera, boot)."""
        digest = hashlib.blake2b(f"{self.world.seed}/{self.id}/{self.boot_count}".encode(), digest_size=16)
        h = digest.hexdigest()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    # System --------------------------------------------------------------------------------
    def info(self) -> GatewayInfo:
        return GatewayInfo(version=FIRMWARE_VERSION, services=dict.fromkeys(SERVICES, True))

    def device_time(self) -> DeviceTime:
        return self.clock.read(self.uptime())

    def stats(self) -> SystemStats:
        npu = accelerator_stats(self.world.seed, self.id, self.world.env.now, self.uptime())
        return SystemStats(unix_timestamp=int(self.clock.now()), ai_runtime=npu)

    def ota_status(self) -> OtaStatus:
        """The zero status with the current boot id on a device that never ran an OTA."""
        return self.ota.report()

    # Snapshot ------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "password": self.password,
            "powered": self.powered,
            "sessions": dict(self._sessions),
            "boot_count": self.boot_count,
            "booted_at": self.booted_at,
            "down_until": self.down_until,
            "clock": self.clock.state(),
            "fs": self.fs.state(),
            "ota": self.ota.state(),
            "os_upgrade": self.os_upgrade.state(),
            "lens": self.lens.state(),
            "peripherals": self.peripherals.state(),
            "platform": platform_state.dump(self),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.password = state["password"]
        self.powered = state["powered"]
        self._sessions = dict(state["sessions"])
        self.boot_count = state.get("boot_count", 0)
        self.booted_at = state.get("booted_at", self.booted_at)
        self.clock.set_state(state.get("clock", {}))
        self.down_until = state.get("down_until")
        if "fs" in state:
            self.fs.set_state(state["fs"])
            self.ota.set_state(state["ota"])
            self.os_upgrade.set_state(state["os_upgrade"])
        if "lens" in state:
            self.lens.set_state(state["lens"])
            self.peripherals.set_state(state["peripherals"])
        if "platform" in state:
            platform_state.load(self, state["platform"])
        if not self.powered and self.down_until is not None:
            self.world.env.process(self._boot(max(0.0, self.down_until - self.world.env.now)))

"""An AI camera: the one place that assembles its parts (power, clock, partitions, files, optics,
peripherals, AI runtime, containers and apps, logs, OTA and OS upgrade), and the device-side state
its gateway sees directly: sessions and credentials.

Power (:mod:`twin.camera.power`) goes down on a reboot; then every session is dropped."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import secrets
from typing import TYPE_CHECKING, Any, Protocol

from cryptography.hazmat.primitives.asymmetric import padding

from hardware.ports.errors import InvalidInput, TimestampSkew, Unauthenticated
from hardware.ports.events import EventKind
from hardware.ports.types import DeviceTime, GatewayInfo, PublicKey, SystemStats
from twin.camera import platform_state
from twin.camera.admin import DeviceAdmin
from twin.camera.ai_runtime import AiRuntime
from twin.camera.apps import AppManager
from twin.camera.clock import DeviceClock
from twin.camera.containers import ContainerRuntime
from twin.camera.device_info import device_info as compose_device_info
from twin.camera.event_bus import DeviceEventBus
from twin.camera.fs import seeded
from twin.camera.lens import Lens
from twin.camera.logs import DeviceLogs
from twin.camera.monitor import Monitor
from twin.camera.os_upgrade import OsUpgrade
from twin.camera.ota import Ota
from twin.camera.peripherals import Peripherals
from twin.camera.platform_state import DurablePlatform, Platform
from twin.camera.power import RESTART_DELAY_S, Power
from twin.camera.preinstall import preinstall
from twin.camera.stats import accelerator_stats
from twin.camera.storage import Storage
from twin.camera.video.scene import SceneWorld

if TYPE_CHECKING:
    from twin.keys import KeyRing

FIRMWARE_VERSION = "0.1.0"
TIMESTAMP_WINDOW_S = 300
SERVICES = ("ai-runtime", "event-bus", "device-control", "app-manager")
MAX_SESSIONS = 1024
"""Login sessions a camera keeps. The device keeps them in memory with no expiry (only logout or a
restart ends one); the twin bounds them: past this many, the oldest login is forgotten."""
PASSWORD_MIN, PASSWORD_MAX = 8, 32
CREDENTIALS_KIND = "camera_credentials"
"""Durable, as the device's own credentials file: one document per camera, keyed by its id, written
when the password changes and read back when the camera is built."""


@functools.lru_cache(maxsize=1024)
def _token_digest(token: str) -> str:
    """A session token's key (a client sends the same token request after request: hashed once
    while it is in use)."""
    token = token.removeprefix("Bearer ").strip()
    return hashlib.sha256(token.encode()).hexdigest()


class CameraWorld(SceneWorld, Protocol):
    """What a camera uses of the world beyond the engine: its group's spec (for the scene) and the
    fleet's RSA keys."""

    keys: KeyRing


class Camera:
    """The aggregate: builds the parts, each with the collaborators it uses, and wires the hooks
    that run the other way (power going down, a container exiting, a model's users)."""

    def __init__(self, world: CameraWorld, camera_id: str, index: int) -> None:
        self.world = world
        self.id = camera_id
        self.index = index
        self.username = world.config.gateway_username
        self.password = world.config.gateway_password
        self._credentials = world.store.collection(CREDENTIALS_KIND)
        self.password = self._credentials.get_as(camera_id, lambda doc: doc["password"]) or self.password
        self._sessions: dict[str, str] = {}
        self.power = Power(world, camera_id)
        self.clock = DeviceClock(world, camera_id)
        self.storage = Storage(world, camera_id)
        self.fs = seeded(self.clock.now, camera_id, f"{world.seed}/{camera_id}", self.storage, world.store)
        self.events = DeviceEventBus(world, camera_id)
        self.ai = AiRuntime(world, camera_id, self.clock, self.power, self.storage, self.fs)
        self.containers = ContainerRuntime(world, camera_id, self.clock, self.storage, self.fs)
        self.admin = DeviceAdmin(world, camera_id, index, self.clock, FIRMWARE_VERSION)
        self.lens = Lens(world, camera_id)
        self.peripherals = Peripherals(world, camera_id, self.lens, self.power)
        self.monitor = Monitor(
            world,
            camera_id,
            self.clock,
            self.power,
            self.storage,
            self.events,
            self.ai,
            self.containers,
            self.peripherals,
        )
        self.apps = AppManager(
            world,
            camera_id,
            self.clock,
            self.power,
            self.fs,
            self.events,
            self.ai,
            self.containers,
            self.monitor,
            lambda apps: DurablePlatform(world.store, camera_id, apps),
        )
        self.logs = DeviceLogs(world, camera_id, self.clock, self.power, self.fs)
        self.ota = Ota(world, camera_id, self.clock, self.power, self.fs, self.logs)
        self.os_upgrade = OsUpgrade(
            world, camera_id, self.clock, self.power, self.storage, self.fs, self.logs
        )
        self.ai.model_users = self.apps.apps_using_model
        self.ai.machine = lambda: self.monitor.figures
        self.ai.durable = self.containers.durable = self.storage.durable = self.apps.durable
        self.containers.exit_listeners.append(self.apps.runtime.container_exited)
        self.power.on_down += [
            self.drop_sessions,
            lambda _: self.logs.power_down(),
            lambda _: self.apps.power_down(),
        ]
        self.power.on_up.append(self.apps.power_up)
        world.emit(EventKind.CAMERA_BOOTED, camera_id, index=index)
        preinstall(self.apps, world.config.spec_by_camera().get(camera_id, world.config.cameras).apps)

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
        if len(self._sessions) >= MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
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
        self._credentials.put(self.id, {"password": plain_new})
        self.world.emit(EventKind.CAMERA_PASSWORD_CHANGED, self.id)
        self.world.env.process(self._service_restart())

    def _service_restart(self):
        yield self.world.env.timeout(RESTART_DELAY_S)
        self.drop_sessions("password_change")

    # Power ---------------------------------------------------------------------------------
    @property
    def powered(self) -> bool:
        return self.power.powered

    @property
    def boot_count(self) -> int:
        return self.power.boot_count

    # System --------------------------------------------------------------------------------
    def info(self) -> GatewayInfo:
        return GatewayInfo(version=FIRMWARE_VERSION, services=dict.fromkeys(SERVICES, True))

    def device_info(self, host: str) -> dict[str, object]:
        return compose_device_info(self, host)

    def device_time(self) -> DeviceTime:
        return self.clock.read(self.power.uptime())

    def stats(self) -> SystemStats:
        npu = accelerator_stats(self.world.seed, self.id, self.world.env.now, self.power.uptime())
        return SystemStats(unix_timestamp=int(self.clock.now()), ai_runtime=npu)

    # Snapshot ------------------------------------------------------------------------------
    def _platform(self) -> Platform:
        return Platform(self.storage, self.events, self.ai, self.containers, self.apps, self.admin)

    def state(self) -> dict[str, Any]:
        return {
            "password": self.password,
            "sessions": dict(self._sessions),
            **self.power.state(),
            "clock": self.clock.state(),
            "fs": self.fs.state(),
            "ota": self.ota.state(),
            "os_upgrade": self.os_upgrade.state(),
            "lens": self.lens.state(),
            "peripherals": self.peripherals.state(),
            "platform": platform_state.dump(self._platform()),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.password = state["password"]
        self._sessions = dict(state["sessions"])
        self.power.set_state(state)
        self.clock.set_state(state.get("clock", {}))
        if "fs" in state:
            self.fs.set_state(state["fs"])
            self.ota.set_state(state["ota"])
            self.os_upgrade.set_state(state["os_upgrade"])
        if "lens" in state:
            self.lens.set_state(state["lens"])
            self.peripherals.set_state(state["peripherals"])
        if "platform" in state:
            platform_state.load(self._platform(), state["platform"])
        self.power.resume()

"""What the edge gateway API needs from one camera (simulated, or a real device behind a passthrough).

The gateway is split per area as later issues add them (system, ai, apps, containers, media,
peripherals, files, logs, monitor, events); ``GatewayBackend`` composes the areas.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hardware.ports.camera_audio import GatewayAudio
from hardware.ports.camera_hw import GatewayLens, GatewayPeripherals, GatewayPicture
from hardware.ports.clock import Clock
from hardware.ports.gateway_admin import GatewayAdmin, GatewayWorkbench
from hardware.ports.gateway_apps import (
    GatewayAi,
    GatewayApps,
    GatewayContainers,
    GatewayEvents,
    GatewayMonitor,
    GatewayStorage,
)
from hardware.ports.gateway_files import GatewayFiles, GatewayLogs, GatewayShell, GatewayUpgrade
from hardware.ports.media import GatewayMedia
from hardware.ports.types import (
    ClientTimeSync,
    DeviceTime,
    GatewayInfo,
    OtaStatus,
    PublicKey,
    SystemStats,
    TimeConfig,
    TimezoneInfo,
)


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

    def stats(self) -> SystemStats: ...

    def change_password(self, old_password: str, new_password: str, timestamp: int) -> None:
        """Both passwords RSA ciphertext or plaintext, like login. ``TimestampSkew`` for a stale
        non-zero timestamp; ``InvalidInput(resource="parameter")`` for a new password outside 8-32
        characters; ``InvalidInput`` for a wrong (non-empty) old password. Sessions end shortly after."""

    def restart(self) -> None:
        """Reboot the device: it goes down shortly after answering and is unreachable while booting."""

    def ota_status(self) -> OtaStatus: ...

    def os_upgrade_status(self) -> dict[str, object] | None:
        """The current OS-upgrade job, or None when there is none."""

    # Device time -------------------------------------------------------------------------------
    def device_time(self) -> DeviceTime:
        """The device's clock; every timestamp the device reports is on it."""

    def set_time(self, datetime: str) -> None:
        """RFC 3339; ``InvalidInput`` if malformed or while NTP is enabled."""

    def sync_time_from_client(self, client_timestamp: int) -> ClientTimeSync: ...

    def time_config(self) -> TimeConfig: ...

    def save_time_config(
        self,
        timezone: str,
        time_format: str,
        sync_mode: str,
        ntp_server: str,
        ntp_interval: int,
        manual_datetime: str,
    ) -> None: ...

    def set_timezone(self, timezone: str) -> None:
        """``InvalidInput`` for a name not in :meth:`timezones`."""

    def timezones(self) -> tuple[TimezoneInfo, ...]: ...

    def set_ntp(self, enabled: bool | None, server: str, interval: int) -> None: ...

    def sync_ntp(self) -> None:
        """Enable NTP and put the device clock back on true time."""


@runtime_checkable
class GatewayBackend(Protocol):
    id: str
    clock: Clock
    auth: GatewayAuth
    system: GatewaySystem
    media: GatewayMedia
    lens: GatewayLens
    peripherals: GatewayPeripherals
    picture: GatewayPicture
    audio: GatewayAudio
    files: GatewayFiles
    logs: GatewayLogs
    shell: GatewayShell
    upgrade: GatewayUpgrade
    ai: GatewayAi
    apps: GatewayApps
    containers: GatewayContainers
    events: GatewayEvents
    storage: GatewayStorage
    monitor: GatewayMonitor
    admin: GatewayAdmin
    workbench: GatewayWorkbench

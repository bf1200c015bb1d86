"""``GET /api/v1/device-info``: the device handler's ``DeviceInfo`` struct (``handlers/device_info.go``),
composed from the camera's own models.

A plain Go struct, not a protobuf one: every field is always present (zero values included) except
``camera_module``'s ``i2c_bus``/``i2c_address``/``pixel_format``, ``soc``'s ``core``/``npu`` and
``ota``'s ``latest_version``/``changelog``, which are ``omitempty``. ``ip_address`` is the host the
client used to reach the device (the request's Host header without the port); ``ota`` never reports
an available update (the handler hard-codes ``update_available: false``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from twin.camera.admin import MODEL
from twin.camera.figures import CORES, CPU_MHZ, CPU_MODEL, KERNEL, MEMORY_TOTAL

if TYPE_CHECKING:
    from twin.camera.admin import DeviceAdmin
    from twin.camera.monitor import Monitor
    from twin.camera.os_upgrade import OsUpgrade
    from twin.camera.ota import Ota
    from twin.camera.power import Power


class Camera(Protocol):
    """The camera's parts the device information is composed from."""

    admin: DeviceAdmin
    ota: Ota
    os_upgrade: OsUpgrade
    monitor: Monitor
    power: Power


GIB = 1024**3
BUILD_DATE = "2026-08-19T10:12:44+08:00"
GIT_COMMIT = "04fc28cb"
OS_NAME = "AIPC OS"
OS_BUILD_TIME = "20260812093015"
DISTRO = "Debian GNU/Linux 12"
SOC = {"vendor": "Rockchip", "model": "RK3588", "npu": "NPU 6 TOPS"}
"""What ``getSoCInfo`` reports for an RK3588 (no ``core``: omitted when empty)."""
SENSOR = {"model": "imx678", "i2c_bus": 1, "i2c_address": "0x1a", "pixel_format": 12}
INSTALL_PREFIX = "/data/aipc"
"""``constants.DefaultRootPath``: the install prefix, which is also the files API's default root."""


def uptime_text(seconds: int) -> str:
    """``formatUptime``: days and hours are shown only when non-zero (and hours whenever days are)."""
    days, hours, mins = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    if days > 0:
        return f"{days} days, {hours} hours, {mins} minutes"
    if hours > 0:
        return f"{hours} hours, {mins} minutes"
    return f"{mins} minutes"


def device_info(camera: Camera, host: str) -> dict[str, object]:
    admin = camera.admin
    factory = admin.factory()
    version = camera.ota.current_version()
    used = camera.monitor.simulated.memory_used()
    uptime = int(camera.power.uptime())
    return {
        "device_name": admin.device_name,
        "model": MODEL,
        "serial_number": factory.get("serial_number", ""),
        "firmware_version": version,
        "build_date": BUILD_DATE,
        "git_commit": GIT_COMMIT,
        "hardware_version": factory.get("hardware_revision", "1.0"),
        "os_version": f"{OS_NAME} {camera.os_upgrade.version}",
        "os_build_time": OS_BUILD_TIME,
        "distro": DISTRO,
        "kernel_version": KERNEL,
        "soc": dict(SOC),
        "cpu": {"model": CPU_MODEL, "cores": CORES, "frequency_mhz": CPU_MHZ},
        "memory": {
            "total_gb": MEMORY_TOTAL / GIB,
            "used_gb": used / GIB,
            "used_percent": 100.0 * used / MEMORY_TOTAL,
        },
        "camera_module": dict(SENSOR),
        "mac_address": admin.interface("eth0").mac or factory.get("mac_address", ""),
        "ip_address": host[: host.rfind(":")] if ":" in host else host,
        "uptime": uptime,
        "uptime_formatted": uptime_text(uptime),
        "install_prefix": INSTALL_PREFIX,
        "ota": {"update_available": False, "current_version": version},
        "factory": factory,
    }

"""What the edge gateway API needs for the device's administration (device name, factory data,
settings, network, the event log) and for the workbench (development projects and their builds)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class GatewayAdmin(Protocol):
    """The device's name and factory data, settings, network configuration, event logs and config
    jobs."""

    def rename(self, device_name: str) -> None: ...

    def factory(self) -> dict[str, object]: ...  # factoryeeprom.Info

    def set_factory(self, key: str, value: str) -> tuple[str, str]: ...  # field (SN, MAC...), value

    def settings(self) -> dict[str, str]: ...

    def set_setting(self, key: str, value: str) -> None: ...

    def delete_setting(self, key: str) -> None:
        """``NotFound`` for a key that is not set."""

    def network_config(self, interface: str) -> dict[str, object]: ...

    def configure_network(
        self, interface: str, mode: str, ip_address: str, subnet_mask: str, gateway: str, dns: list[str]
    ) -> None: ...

    def interfaces(self) -> list[dict[str, object]]: ...

    def event_logs(
        self, category: str, level: str, start: str, end: str, search: str, limit: int, offset: int
    ) -> dict[str, object]: ...

    def add_event_log(self, fields: dict[str, Any]) -> dict[str, object]: ...  # a bound LogRecord

    def event_log_statistics(self) -> dict[str, int]: ...

    def event_log_templates(self) -> dict[str, dict[str, object]]: ...

    def cleanup_event_logs(self, days: int) -> int: ...


@runtime_checkable
class GatewayWorkbench(Protocol):
    """Development projects (files, uploads) and builds that produce an installable image.
    Project ids are the device's integers, given as path text (``InvalidInput`` when not a number)."""

    def base_images(self) -> list[dict[str, object]]: ...

    def projects(self) -> list[dict[str, object]]: ...

    def project(self, project_id: str) -> dict[str, object]:
        """``{project, base_image}``."""

    def create(self, fields: dict[str, object]) -> dict[str, object]:
        """``name`` and ``key`` required; ``description``, ``base_image_id``, ``language``."""

    def update(self, project_id: str, fields: dict[str, object]) -> dict[str, object]: ...

    def delete(self, project_id: str) -> None: ...

    def write(self, project_id: str, path: str, data: bytes) -> dict[str, object]:
        """``path`` relative to the project, without ``..``."""

    def source(self, project_id: str, filename: str, data: bytes) -> dict[str, object]:
        """Unpack a ``.zip``/``.tar``/``.tar.gz`` source archive into the project."""

    def read(self, project_id: str, path: str) -> dict[str, object]: ...

    def files(self, project_id: str, path: str) -> list[dict[str, object]]: ...

    def builds(self, project_id: str) -> list[dict[str, object]]: ...

    def build(self, project_id: str, version: str) -> dict[str, object]:
        """Start a build; poll :meth:`builds` until ``success`` (``image_path``, ``manifest_path``)."""

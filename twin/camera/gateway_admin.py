"""The twin's implementation of the gateway's administration (device info, factory data, settings,
network, event log) and workbench (dev projects and their builds) areas, over one camera of the world."""

from __future__ import annotations

from typing import Any

from twin.camera.area import CameraArea
from twin.camera.device_info import device_info


class TwinGatewayAdmin(CameraArea):
    def info(self, host: str = "") -> dict[str, object]:
        return device_info(self.camera, host)

    def rename(self, device_name: str) -> None:
        self.camera.admin.rename(device_name)

    def factory(self) -> dict[str, object]:
        return self.camera.admin.factory_info()

    def set_factory(self, key: str, value: str) -> tuple[str, str]:
        return self.camera.admin.set_factory(key, value)

    def settings(self) -> dict[str, str]:
        return dict(self.camera.admin.settings)

    def set_setting(self, key: str, value: str) -> None:
        self.camera.admin.set(key, value)

    def delete_setting(self, key: str) -> None:
        self.camera.admin.delete(key)

    def network_config(self, interface: str) -> dict[str, object]:
        return self.camera.admin.network_config(interface)

    def configure_network(
        self, interface: str, mode: str, ip_address: str, subnet_mask: str, gateway: str, dns: list[str]
    ) -> None:
        self.camera.admin.configure(interface, mode, ip_address, subnet_mask, gateway, dns)

    def interfaces(self) -> list[dict[str, object]]:
        return self.camera.admin.interfaces_view()

    def event_logs(
        self, category: str, level: str, start: str, end: str, search: str, limit: int, offset: int
    ) -> dict[str, object]:
        return self.camera.admin.query(category, level, start, end, search, limit, offset)

    def add_event_log(self, fields: dict[str, Any]) -> dict[str, object]:
        return self.camera.admin.record(fields)

    def event_log_statistics(self) -> dict[str, int]:
        return self.camera.admin.statistics()

    def event_log_templates(self) -> dict[str, dict[str, object]]:
        return self.camera.admin.templates()

    def cleanup_event_logs(self, days: int) -> int:
        return self.camera.admin.cleanup(days)


class TwinGatewayWorkbench(CameraArea):
    @property
    def _bench(self) -> Any:
        return self.camera.apps.workbench

    def base_images(self) -> list[dict[str, object]]:
        return self._bench.base_images()

    def projects(self) -> list[dict[str, object]]:
        return [p.view() for _, p in sorted(self._bench.projects.items())]

    def project(self, project_id: str) -> dict[str, object]:
        return self._bench.detail(project_id)

    def create(self, fields: dict[str, object]) -> dict[str, object]:
        return self._bench.create(fields).view()

    def update(self, project_id: str, fields: dict[str, object]) -> dict[str, object]:
        return self._bench.update(project_id, fields).view()

    def delete(self, project_id: str) -> None:
        self._bench.delete(project_id)

    def write(self, project_id: str, path: str, data: bytes) -> dict[str, object]:
        return self._bench.write(project_id, path, data)

    def source(self, project_id: str, filename: str, data: bytes) -> dict[str, object]:
        return self._bench.source(project_id, filename, data)

    def read(self, project_id: str, path: str) -> dict[str, object]:
        return self._bench.read(project_id, path)

    def files(self, project_id: str, path: str) -> list[dict[str, object]]:
        return self._bench.files(project_id, path)

    def builds(self, project_id: str) -> list[dict[str, object]]:
        return self._bench.builds(project_id)

    def build(self, project_id: str, version: str) -> dict[str, object]:
        return self._bench.build(project_id, version)

"""The automation server's devices, device types, drafts, commands and telemetry: the port adapter.

Every call looks the registries up through ``self.world`` so the adapter survives ``world.reset()``
(which rebuilds them from the world's constructor).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.devices import (
    KEEP,
    Approval,
    CommandRecord,
    CommandSent,
    CurrentValues,
    DeviceCreated,
    DeviceDetail,
    DevicePage,
    DeviceType,
    Draft,
    Ingested,
    Keep,
    SourceQuery,
    SourceSeries,
    TelemetryPage,
    TelemetryQuery,
    Validation,
)

if TYPE_CHECKING:
    from twin.world import World


class TwinDevices:
    def __init__(self, world: World) -> None:
        self.world = world

    # Devices -----------------------------------------------------------------------------------
    def list_devices(
        self, page: int = 1, limit: int = 50, device_type: str | None = None, status: str | None = None
    ) -> DevicePage:
        return self.world.devices.list(page, limit, device_type, status)

    def create_device(
        self,
        device_type: str,
        name: str,
        adapter_type: str,
        connection_config: Mapping[str, Any],
        device_id: str | None = None,
        offline_timeout_secs: int | None = None,
    ) -> DeviceCreated:
        return self.world.devices.create(
            device_type, name, adapter_type, connection_config, device_id, offline_timeout_secs
        )

    def get_device(self, device_id: str) -> DeviceDetail:
        return self.world.devices.detail(device_id)

    def current(self, device_id: str) -> CurrentValues:
        return self.world.devices.current(device_id)

    def update_device(
        self,
        device_id: str,
        *,
        name: str | None = None,
        adapter_type: str | None = None,
        connection_config: Mapping[str, Any] | None = None,
        adapter_id: str | Keep | None = KEEP,
        offline_timeout_secs: int | Keep | None = KEEP,
    ) -> None:
        self.world.devices.update(
            device_id,
            name=name,
            adapter_type=adapter_type,
            connection_config=connection_config,
            adapter_id=adapter_id,
            offline_timeout_secs=offline_timeout_secs,
        )

    def delete_device(self, device_id: str) -> None:
        self.world.devices.delete(device_id)

    def send_command(self, device_id: str, command: str, params: Mapping[str, Any]) -> CommandSent:
        return self.world.devices.send_command(device_id, command, params)

    def command_history(self, device_id: str, limit: int) -> tuple[CommandRecord, ...]:
        return self.world.devices.command_history(device_id, limit)

    def push_metric(self, device_id: str, metric: str, value: Any, timestamp: float | None) -> float:
        return self.world.ingest.push_metric(device_id, metric, value, timestamp)

    # Device types --------------------------------------------------------------------------------
    def list_device_types(self) -> tuple[DeviceType, ...]:
        return self.world.device_types.list()

    def get_device_type(self, device_type: str) -> DeviceType:
        return self.world.device_types.get(device_type)

    def create_device_type(self, template: DeviceType) -> DeviceType:
        return self.world.device_types.create(template)

    def validate_device_type(self, template: DeviceType) -> Validation:
        return self.world.device_types.validate(template)

    def delete_device_type(self, device_type: str) -> None:
        self.world.device_types.delete(device_type)

    # Webhook and drafts ------------------------------------------------------------------------
    def webhook(
        self,
        device_id: str,
        data: Mapping[str, Any],
        timestamp: float | None = None,
        quality: float | None = None,
        token: str | None = None,
    ) -> Ingested:
        return self.world.ingest.webhook(device_id, data, timestamp, quality, token)

    def mqtt_uplink(self, device_id: str, data: Mapping[str, Any], topic: str) -> Ingested | None:
        return self.world.ingest.uplink(device_id, data, topic)

    def list_drafts(self) -> tuple[Draft, ...]:
        return self.world.ingest.list_drafts()

    def get_draft(self, draft_id: str) -> Draft:
        return self.world.ingest.get_draft(draft_id)

    def reject_draft(self, draft_id: str, reason: str) -> Draft:
        return self.world.ingest.reject(draft_id, reason)

    def approve_draft(
        self,
        draft_id: str,
        existing_type: str | None = None,
        new_type: DeviceType | None = None,
        device_name: str | None = None,
    ) -> Approval:
        return self.world.ingest.approve(draft_id, existing_type, new_type, device_name)

    # Telemetry -----------------------------------------------------------------------------------
    def telemetry(self, device_id: str, query: TelemetryQuery) -> TelemetryPage:
        page = self.world.telemetry.query(device_id, query)
        self.world.telemetry_stats.read(sum(len(s.timestamps) for s in page.series), page.start)
        return page

    def query_telemetry(self, query: SourceQuery) -> SourceSeries:
        found = self.world.telemetry.query_source(query)
        self.world.telemetry_stats.read(len(found.series.timestamps), found.start)
        return found

"""The automation server's device registry: simulated sensors and client-created devices.

Every device in ``sensors_of(world).groups`` is a device here (adapter ``mqtt``, last seen = its last
procedural sample). Client-created devices, the per-sensor overrides (name, config, timeout,
deletion) and the archive of deleted devices are durable documents in the store. Status is
computed on the world clock: never seen → ``disconnected``; seen within the effective timeout →
``online``; else ``offline``.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.devices import (
    DEVICE_STATUSES,
    KEEP,
    CommandDef,
    CommandRecord,
    CommandSent,
    CurrentMetric,
    CurrentValues,
    Device,
    DeviceCreated,
    DeviceDetail,
    DevicePage,
    DeviceType,
    Keep,
)
from hardware.ports.errors import InternalError, InvalidInput, NotFound
from hardware.ports.events import EventKind
from twin.automation.device_types import render_payload

if TYPE_CHECKING:
    from twin.automation.device_types import DeviceTypeRegistry
    from twin.engine import Engine
    from twin.sensors import SensorFleet

DEFAULT_OFFLINE_TIMEOUT_S = 300
TIMEOUT_RANGE = (30, 86_400)
VIRTUAL_PREFIXES = ("transform.", "virtual.", "computed.", "derived.", "aggregated.")
MAX_KEPT_DETAILS = 10_000
"""Device details kept for re-reads at the same instant; past this many, the memory starts afresh."""


def not_found(device_id: str) -> NotFound:
    return NotFound(f"Device {device_id} not found", resource="device")


def check_timeout(value: int | None) -> None:
    if value is not None and not TIMEOUT_RANGE[0] <= value <= TIMEOUT_RANGE[1]:
        raise InvalidInput("offline_timeout_secs must be between 30 and 86400", field="offline_timeout_secs")


class DeviceRegistry:
    def __init__(
        self,
        world: Engine,
        *,
        sensors: Mapping[str, SensorFleet],
        sensor_of: Mapping[str, SensorFleet],
        device_types: DeviceTypeRegistry,
    ) -> None:
        """``sensors``: the simulated sensor groups by device type; ``sensor_of``: the group of each
        simulated device."""
        self.world = world
        self.sensors = sensors
        self.sensor_of = sensor_of
        self.device_types = device_types
        self.docs = world.store.collection("devices")
        self.overlays = world.store.collection("sensor_overlays")
        self.archive = world.store.collection("archived_devices")
        self.commands = world.store.collection("device_commands")
        self._details: dict[str, tuple[tuple[float, float, int, int], DeviceDetail]] = {}

    # Lookup ----------------------------------------------------------------------------------
    def _sim_doc(self, device_id: str, overlay: dict[str, Any] | None) -> dict[str, Any]:
        fleet = self.sensor_of[device_id]
        doc: dict[str, Any] = {
            "device_id": device_id,
            "name": device_id,
            "device_type": fleet.group.device_type,
            "adapter_type": "mqtt",
            "connection_config": {
                "telemetry_topic": f"device/{fleet.group.device_type}/{device_id}/uplink",
                "command_topic": f"device/{fleet.group.device_type}/{device_id}/downlink",
            },
            "adapter_id": None,
            "offline_timeout_secs": None,
            "last_seen": None,
        }
        doc.update(overlay or {})
        doc["simulated"] = True
        return doc

    def find_doc(self, device_id: str) -> dict[str, Any] | None:
        """The live device's document (sensor defaults merged with overrides), or ``None``."""
        if device_id in self.sensor_of:
            overlay = self.overlays.get(device_id)
            if overlay is not None and overlay.get("deleted_at") is not None:
                return None
            return self._sim_doc(device_id, overlay)
        return self.docs.get(device_id)

    def doc(self, device_id: str) -> dict[str, Any]:
        found = self.find_doc(device_id)
        if found is None:
            raise not_found(device_id)
        return found

    def exists(self, device_id: str) -> bool:
        return self.find_doc(device_id) is not None

    def device_type_of(self, doc: dict[str, Any]) -> DeviceType | None:
        return self.device_types.find(doc["device_type"])

    def last_sample(self, device_id: str) -> float | None:
        """Unix time of a simulated sensor's last report (its gaps skipped), or ``None``."""
        if self.world.env.now < 0:
            return None
        t = self.sensor_of[device_id].last_report(device_id, self.world.env.now)
        return None if t is None else self.world.epoch + t

    def _view(self, doc: dict[str, Any], dtype: DeviceType | None) -> Device:
        last_seen = doc.get("last_seen")
        if doc.get("simulated"):
            sampled = self.last_sample(doc["device_id"])
            last_seen = max(x for x in (last_seen, sampled) if x is not None) if sampled else last_seen
        override = doc.get("offline_timeout_secs")
        default = dtype.default_offline_timeout_secs if dtype else None
        effective = override or default or DEFAULT_OFFLINE_TIMEOUT_S
        if last_seen is None:
            status = "disconnected"
        elif self.world.now() - last_seen > effective:
            status = "offline"
        else:
            status = "online"
        return Device(
            device_id=doc["device_id"],
            name=doc["name"],
            device_type=doc["device_type"],
            adapter_type=doc["adapter_type"],
            connection_config=doc["connection_config"],
            status=status,
            last_seen=last_seen,
            offline_timeout_secs=override,
            effective_offline_timeout_secs=effective,
            adapter_id=doc.get("adapter_id"),
            simulated=bool(doc.get("simulated")),
            metric_count=len(dtype.metrics) if dtype else 0,
            command_count=len(dtype.commands) if dtype else 0,
        )

    def view(self, device_id: str) -> Device:
        doc = self.doc(device_id)
        return self._view(doc, self.device_type_of(doc))

    def all_docs(self) -> list[dict[str, Any]]:
        """Every live device's document, simulated sensors first (the listing's order)."""
        overlays = dict(self.overlays.items())
        docs = [
            self._sim_doc(d, overlays.get(d))
            for fleet in self.sensors.values()
            for d in fleet.device_ids
            if overlays.get(d, {}).get("deleted_at") is None
        ]
        return docs + self.docs.values()

    # Queries ---------------------------------------------------------------------------------
    def list(
        self, page: int = 1, limit: int = 50, device_type: str | None = None, status: str | None = None
    ) -> DevicePage:
        if status == "connected":
            status = "online"
        if status is not None and status not in DEVICE_STATUSES:
            raise InvalidInput(f"Invalid status '{status}'", field="status")
        page, limit = max(1, page), min(max(1, limit), 1000)
        docs = self.all_docs()
        if device_type is not None:
            docs = [d for d in docs if d["device_type"] == device_type]
        types: dict[str, DeviceType | None] = {}

        def view(d: dict[str, Any]) -> Device:
            if d["device_type"] not in types:
                types[d["device_type"]] = self.device_type_of(d)
            return self._view(d, types[d["device_type"]])

        if status is not None:
            views = [v for v in map(view, docs) if v.status == status]
            total, chosen = len(views), views[(page - 1) * limit : page * limit]
        else:
            total, chosen = len(docs), [view(d) for d in docs[(page - 1) * limit : page * limit]]
        return DevicePage(tuple(chosen), page, limit, total)

    def detail(self, device_id: str) -> DeviceDetail:
        """The device, its type's definitions and current values. Kept until the world moves: a
        detail read again at the same instant, with no write to the store and no sensor window
        opened or closed since, is the same object (a client polling a device costs a lookup)."""
        fleet = self.sensor_of.get(device_id)
        world = self.world
        stamp = (world.env.now, world.epoch, world.store.changes, -1 if fleet is None else fleet.changes)
        kept = self._details.get(device_id)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        detail = self._detail(device_id)
        if len(self._details) >= MAX_KEPT_DETAILS:
            self._details.clear()
        self._details[device_id] = (stamp, detail)
        return detail

    def _detail(self, device_id: str) -> DeviceDetail:
        doc = self.doc(device_id)
        dtype = self.device_type_of(doc)
        values = {m.name: m.value for m in self._current_metrics(doc, dtype) if m.value is not None}
        return DeviceDetail(
            self._view(doc, dtype),
            dtype.metrics if dtype else (),
            dtype.commands if dtype else (),
            values,
        )

    def _current_metrics(self, doc: dict[str, Any], dtype: DeviceType | None) -> builtins.list[CurrentMetric]:
        device_id = doc["device_id"]
        values: dict[str, tuple[float, Any]] = {}
        if doc.get("simulated"):
            fleet = self.sensor_of[device_id]
            t = self.last_sample(device_id)
            if t is not None:
                now = fleet.values_of(device_id, t - self.world.epoch)
                values = {name: (t, value) for name, value in now.items()}
        for metric, (ts, value, _) in self.world.store.latest_samples(device_id).items():
            if metric not in values or ts >= values[metric][0]:
                values[metric] = (ts, value)
        out = [
            CurrentMetric(
                m.name, m.display_name, m.unit, m.data_type.kind, values.get(m.name, (None, None))[1]
            )
            for m in (dtype.metrics if dtype else ())
        ]
        known = {m.name for m in out}
        for name in sorted(values):
            if name in known or name == "_raw":
                continue
            virtual = name.startswith(VIRTUAL_PREFIXES)
            kind = "float" if virtual else "string"
            out.append(CurrentMetric(name, name, "-", kind, values[name][1], is_virtual=virtual))
        return out

    def current(self, device_id: str) -> CurrentValues:
        doc = self.doc(device_id)
        dtype = self.device_type_of(doc)
        return CurrentValues(
            self._view(doc, dtype), tuple(self._current_metrics(doc, dtype)), dtype.commands if dtype else ()
        )

    # Mutations -------------------------------------------------------------------------------
    def create(
        self,
        device_type: str,
        name: str,
        adapter_type: str,
        connection_config: Mapping[str, Any],
        device_id: str | None = None,
        offline_timeout_secs: int | None = None,
    ) -> DeviceCreated:
        if self.device_types.find(device_type) is None:
            raise InternalError(f"Failed to add device: Device type template '{device_type}' not found")
        check_timeout(offline_timeout_secs)
        if not device_id:
            suffix = self.world.streams.get("automation.device_ids").bytes(4).hex()
            device_id = f"{device_type}_{suffix}"
        existing = self.find_doc(device_id)
        fields = {
            "name": name,
            "device_type": device_type,
            "adapter_type": adapter_type,
            "connection_config": dict(connection_config),
            "offline_timeout_secs": offline_timeout_secs,
        }
        if device_id in self.sensor_of:
            overlay = {k: v for k, v in (self.overlays.get(device_id) or {}).items() if k != "deleted_at"}
            self.overlays.put(device_id, {**overlay, **fields})
        else:
            base = existing or {"device_id": device_id, "adapter_id": None, "last_seen": None}
            self.docs.put(device_id, {**base, **fields})
        self.archive.delete(device_id)
        return DeviceCreated(device_id, updated_existing=existing is not None)

    def update(
        self,
        device_id: str,
        *,
        name: str | None = None,
        adapter_type: str | None = None,
        connection_config: Mapping[str, Any] | None = None,
        adapter_id: str | Keep | None = KEEP,
        offline_timeout_secs: int | Keep | None = KEEP,
    ) -> None:
        doc = self.doc(device_id)
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
        if adapter_type is not None:
            changes["adapter_type"] = adapter_type
        if connection_config is not None:
            changes["connection_config"] = dict(connection_config)
        if adapter_id is not KEEP:
            changes["adapter_id"] = adapter_id
        if offline_timeout_secs is not KEEP:
            check_timeout(offline_timeout_secs)
            changes["offline_timeout_secs"] = offline_timeout_secs
        self._save(doc, changes)

    def _save(self, doc: dict[str, Any], changes: dict[str, Any]) -> None:
        device_id = doc["device_id"]
        if doc.get("simulated"):
            self.overlays.put(device_id, {**(self.overlays.get(device_id) or {}), **changes})
        else:
            self.docs.put(device_id, {**doc, **changes})

    def seen(self, device_id: str, at: float | None = None) -> None:
        """Record that the device talked to the server (webhook, pushed metric), by default now."""
        self._save(self.doc(device_id), {"last_seen": self.world.now() if at is None else at})

    def delete(self, device_id: str) -> None:
        doc = self.doc(device_id)
        dtype = self.device_type_of(doc)
        now = self.world.now()
        if doc.get("simulated"):
            self._save(doc, {"deleted_at": now})
        else:
            self.docs.delete(device_id)
        self.archive.put(
            device_id,
            {
                "device_id": device_id,
                "device_type": doc["device_type"],
                "metrics": [m.name for m in dtype.metrics] if dtype else [],
                "simulated": bool(doc.get("simulated")),
                "deleted_at": now,
            },
        )

    def send_command(self, device_id: str, command: str, params: Mapping[str, Any]) -> CommandSent:
        doc = self.doc(device_id)
        dtype = self.device_type_of(doc)
        defined = {c.name: c for c in dtype.commands} if dtype else {}
        if defined and command not in defined:
            raise InvalidInput(
                f"Failed to send command: Command '{command}' not defined for device type "
                f"'{doc['device_type']}'",
                field="command",
            )
        command_id = str(uuid.UUID(bytes=self.world.streams.get("automation.commands").bytes(16), version=4))
        simulated = bool(doc.get("simulated"))
        # A real device gets the command on its MQTT downlink topic (the reference's fallback for a
        # device whose type is unknown is ``{id}/command/{command}``).
        topic = doc["connection_config"].get("command_topic") or (
            f"device/{doc['device_type']}/{device_id}/downlink" if dtype else f"{device_id}/command/{command}"
        )
        now = self.world.now()
        self.commands.put(
            command_id,
            {
                "device_id": device_id,
                "command_id": command_id,
                "command_name": command,
                "parameters": dict(params),
                "status": "success" if simulated else "pending",  # a field device has not answered yet
                "result": {"acknowledged": True} if simulated else None,
                "error": None,
                "created_at": now,
                "completed_at": now if simulated else None,
            },
        )
        self.world.emit(
            EventKind.DEVICE_COMMAND_RESULT,
            device_id,
            command_id=command_id,
            command=command,
            params=dict(params),
            status="success" if simulated else "sent",
            result={"acknowledged": True} if simulated else None,
            timestamp=self.world.now(),
            downlink_topic=None if simulated else topic,
            payload=render_payload(defined.get(command) or CommandDef(command, command), params, command_id),
        )
        return CommandSent(device_id, command, command_id)

    def command_history(self, device_id: str, limit: int) -> tuple[CommandRecord, ...]:
        self.doc(device_id)  # NotFound for an unknown device
        mine = [d for d in self.commands.values() if d["device_id"] == device_id]
        return tuple(
            CommandRecord(**{k: v for k, v in d.items() if k != "device_id"}) for d in mine[::-1][:limit]
        )

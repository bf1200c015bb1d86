"""The data views over the world: the unified data sources, extension metrics, device statistics and
the resources rules can use (:class:`hardware.ports.data.DataCatalog`).

Data sources are every device type's metrics of every device, the metrics a device reported beyond
its type ("Virtual metric"), every installed extension's declared metrics and every transform
output. Current values come from the stored samples (``extension:<id>`` and ``transform:<id>``
rows included) and, for the simulated sensors, from their signal at their last sample. Extension
metrics pushed over ``/extensions/:id/push-metrics`` are stored under ``extension:<id>`` and
published as ``extension.output`` events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.data import SourceFilter, SourcePage
from hardware.ports.errors import InvalidInput
from hardware.ports.events import EventKind
from twin.automation import transforms
from twin.automation.ingest import kind_of
from twin.automation.server import automation_of

if TYPE_CHECKING:
    from hardware.ports.devices import DataType, Device
    from twin.world import World

MAX_PUSHED = 100
MAX_POINTS = 10_000
DAY_S = 86_400
Row = dict[str, Any]


def source_row(kind: str, name: str, display: str, field: str, field_display: str, data_type: str,
               unit: str | None, description: str | None, last_update: int | None = None) -> Row:  # fmt: skip
    return {
        "id": f"{kind}:{name}:{field}", "source_type": kind, "source_name": name,
        "source_display_name": display, "field": field, "field_display_name": field_display or field,
        "data_type": data_type, "unit": unit or None, "description": description, "current_value": None,
        "last_update": last_update, "quality": None,
    }  # fmt: skip


def rule_type(t: DataType) -> Any:
    if t.kind in ("integer", "float"):
        return "number"
    if t.kind == "boolean":
        return "boolean"
    return {"enum": []} if t.kind == "enum" else "string"


class TwinData:
    def __init__(self, world: World) -> None:
        self.world = world

    def _devices(self) -> tuple[Device, ...]:
        return automation_of(self.world).devices.list(1, 1_000_000, None, None).devices

    # Data sources ---------------------------------------------------------------------------------
    def _device_sources(self) -> list[Row]:
        rows: list[Row] = []
        device_types = automation_of(self.world).device_types
        for device in self._devices():
            dtype = device_types.find(device.device_type)
            known = set()
            for m in dtype.metrics if dtype else ():
                known.add(m.name)
                rows.append(source_row("device", device.device_id, device.name, m.name, m.display_name,
                                       m.data_type.kind, m.unit, None))  # fmt: skip
            for metric in self.world.store.sample_metrics(device.device_id):
                if metric not in known and metric != "_raw":
                    rows.append(source_row("device", device.device_id, device.name, metric, metric, "unknown",
                                           None, "Virtual metric"))  # fmt: skip
        return rows

    def _extension_sources(self) -> list[Row]:
        return [
            source_row("extension", e.id, e.name, m.name, m.display_name, m.data_type.lower(), m.unit, None)
            for e in automation_of(self.world).extensions.list_extensions()
            for m in e.metrics
        ]

    def _transform_sources(self) -> list[Row]:
        automations = automation_of(self.world).automations
        rows = [
            source_row(
                "transform",
                o.transform_id,
                o.transform_name,
                o.metric_name,
                o.display_name,
                o.data_type,
                o.unit,
                o.description,
                o.last_update,
            )
            for o in automations.data_sources()
        ]
        seen = {r["id"] for r in rows}
        for t in automations.list_automations():
            doc = automations.doc(t.id)
            if not doc["enabled"]:
                continue
            for metric in transforms.output_metrics(doc):
                if f"transform:{t.id}:{metric}" not in seen:
                    name = doc["name"]
                    description = f"Output from Transform: {name}"
                    row = source_row(
                        "transform", t.id, name, metric, f"{name}: {metric}", "float", None, description
                    )
                    rows.append(row)
        return rows

    def data_sources(self, f: SourceFilter) -> SourcePage:
        rows: list[Row] = []
        if f.source_type in (None, "device"):
            rows += self._device_sources()
        if f.source_type in (None, "extension"):
            rows += self._extension_sources()
        if f.source_type in (None, "transform"):
            rows += self._transform_sources()
        rows.sort(key=lambda r: r["id"])
        options: dict[str, str] = {}
        for r in rows:
            if f.source_type in (None, r["source_type"]):
                options.setdefault(r["source_name"], r["source_display_name"])
        if f.source_type is not None:
            rows = [r for r in rows if r["source_type"] == f.source_type]
        if f.source is not None:
            rows = [r for r in rows if r["source_name"] == f.source]
        if f.search is not None:
            q = f.search.lower()
            rows = [
                r for r in rows
                if any(q in (r[k] or "").lower() for k in
                       ("id", "source_display_name", "field_display_name", "source_name", "description"))
            ]  # fmt: skip
        offset = min(f.offset, len(rows))
        page = rows[offset : offset + f.limit]
        if not f.skip_telemetry:
            current: dict[str, tuple[float | None, dict[str, Any]]] = {}
            for row in page:
                self._fill(row, current)
        pairs = sorted(options.items(), key=lambda kv: kv[1])
        return SourcePage(tuple(page), len(rows), tuple(pairs))

    def _fill(self, row: Row, current: dict[str, tuple[float | None, dict[str, Any]]]) -> None:
        """``current``: per device already read for this page, its ``last_seen`` and current values
        (the rows of one device share one read)."""
        kind, name, field = row["source_type"], row["source_name"], row["field"]
        key = name if kind == "device" else f"{kind}:{name}"
        stored = self.world.store.latest_samples(key).get(field)
        if stored is not None:
            ts, value, quality = stored
            row.update(current_value="<binary>" if isinstance(value, bytes) else value, last_update=int(ts),
                       quality=quality)  # fmt: skip
        elif kind == "device" and automation_of(self.world).devices.exists(name):
            if name not in current:
                read = automation_of(self.world).devices.current(name)
                current[name] = (read.device.last_seen, {m.name: m.value for m in reversed(read.metrics)})
            last, values = current[name]
            if values.get(field) is not None:
                row.update(current_value=values[field], last_update=int(last) if last is not None else None)
        if row["data_type"] == "unknown" and row["current_value"] is not None:
            row["data_type"] = kind_of(row["current_value"])

    # Extension metrics ----------------------------------------------------------------------------
    def extension_metric_data(
        self, extension_id: str, metric: str, start: int | None, end: int | None, limit: int
    ) -> Mapping[str, Any]:
        end = int(self.world.now()) if end is None else end
        start = end - DAY_S if start is None else start
        rows = self.world.store.sample_page(
            f"extension:{extension_id}", metric, start, end, 0, min(limit, MAX_POINTS)
        )
        points = [{"timestamp": int(ts), "value": v, "quality": q} for ts, v, q in reversed(rows)]
        return {
            "source_id": f"extension:{extension_id}:{metric}", "extension_id": extension_id, "metric": metric,
            "start": start, "end": end, "count": len(points), "data": points,
        }  # fmt: skip

    def push_extension_metrics(self, extension_id: str, metrics: Mapping[str, Any]) -> tuple[int, int]:
        if not metrics:
            raise InvalidInput("'metrics' is empty", field="metrics")
        if len(metrics) > MAX_PUSHED:
            raise InvalidInput(f"Too many metrics: {len(metrics)} (max {MAX_PUSHED})", field="metrics")
        now = int(self.world.now())
        values = {
            name: v if isinstance(v, bool | int | float | str) else _json(v) for name, v in metrics.items()
        }
        self.world.store.put_samples(
            f"extension:{extension_id}", [(n, now, v, None) for n, v in values.items()]
        )
        for name, value in values.items():
            self.world.emit(EventKind.EXTENSION_OUTPUT, extension_id, extension_id=extension_id,
                            output_name=name, value=value, timestamp=now)  # fmt: skip
        return len(values), len(values)

    # Statistics -----------------------------------------------------------------------------------
    def device_stats(self) -> Mapping[str, Any]:
        rows = []
        devices = automation_of(self.world).devices
        for device in self._devices():
            values = devices.current(device.device_id).metrics
            rows.append({
                "device_id": device.device_id, "device_type": device.device_type, "name": device.name,
                "online": device.online, "metrics_count": sum(1 for m in values if m.value is not None),
                "last_seen": int(device.last_seen or 0),
            })  # fmt: skip
        online = sum(1 for r in rows if r["online"])
        stats = {"total_devices": len(rows), "online_devices": online, "offline_devices": len(rows) - online}
        return {"stats": {**stats, "devices": rows}}

    def rule_resources(self) -> Mapping[str, Any]:
        devices = []
        device_types = automation_of(self.world).device_types
        for device in self._devices():
            dtype = device_types.find(device.device_type)
            if dtype is None:
                metrics: list[dict[str, Any]] = [
                    {
                        "name": "value",
                        "data_type": "number",
                        "unit": None,
                        "min_value": None,
                        "max_value": None,
                    }
                ]
                commands: list[dict[str, Any]] = [{"name": "on", "description": "Turn on", "parameters": []},
                            {"name": "off", "description": "Turn off", "parameters": []}]  # fmt: skip
            else:
                metrics = [{"name": m.name, "data_type": rule_type(m.data_type), "unit": m.unit or None,
                            "min_value": m.min, "max_value": m.max} for m in dtype.metrics]  # fmt: skip
                commands = [
                    {"name": c.name, "description": c.display_name or c.description, "parameters": [
                        {"name": p.name, "param_type": p.data_type.kind.capitalize(), "required": True,
                         "default_value": p.default_value} for p in c.parameters]}
                    for c in dtype.commands
                ]  # fmt: skip
            devices.append({"id": device.device_id, "name": device.name, "device_type": device.device_type,
                            "metrics": metrics, "commands": commands, "online": device.online})  # fmt: skip
        categories = [{"id": c, "name": c.capitalize(), "channel_type": c, "enabled": True}
                      for c in ("alert", "system", "business")]  # fmt: skip
        return {"devices": devices, "message_categories": categories}


def _json(value: Any) -> str:
    """A value that is not a scalar, as its JSON text (the vendor stores ``other.to_string()``)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

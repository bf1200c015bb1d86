"""Data pushed by devices (webhook, ``POST /devices/:id/metrics``) and auto-onboarding drafts.

Pushed samples are durable (the store's ``samples`` table). Each ingested metric value publishes
a ``DEVICE_METRIC`` event; data from an unknown device is recorded under its id and opens a draft
(``DEVICE_DISCOVERED``) that approval turns into a device with the same id.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.devices import Approval, DataType, DeviceType, Draft, Ingested, MetricDef
from hardware.ports.errors import InvalidInput, NotFound, Unauthenticated
from hardware.ports.events import EventKind
from hardware.ports.provisioning import OnboardConfig

if TYPE_CHECKING:
    from twin.automation.device_types import DeviceTypeRegistry
    from twin.automation.images import ImageStore
    from twin.automation.registry import DeviceRegistry
    from twin.engine import Engine
    from twin.sensors import SensorFleet


def kind_of(value: Any) -> str:
    """A JSON value's type as the server names it: ``boolean``, ``integer``, ``float``, ``array``,
    ``null`` or ``string`` (an object too)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else "string"


def _draft(doc: dict[str, Any]) -> Draft:
    return Draft(
        id=doc["id"],
        device_id=doc["device_id"],
        source=doc["source"],
        status=doc["status"],
        sample_count=doc["sample_count"],
        max_samples=doc["max_samples"],
        discovered_at=doc["discovered_at"],
        updated_at=doc["updated_at"],
        generated_type=doc.get("generated_type"),
        original_topic=doc.get("original_topic"),
        error_message=doc.get("error_message"),
    )


class Ingest:
    def __init__(
        self,
        world: Engine,
        *,
        devices: DeviceRegistry,
        device_types: DeviceTypeRegistry,
        sensor_of: Mapping[str, SensorFleet],
        images: ImageStore | None = None,
    ) -> None:
        """``sensor_of``: the simulated devices (their own uplink messages are not ingested again);
        ``images``: where image values are stored (the value becomes the image's URL)."""
        self.world = world
        self.devices = devices
        self.device_types = device_types
        self.sensor_of = sensor_of
        self.images = images
        self.onboard = OnboardConfig()
        """Auto-onboarding's configuration (in memory, as on the server)."""
        self.drafts = world.store.collection("device_drafts")

    def _record(self, device_id: str, data: Mapping[str, Any], ts: float, quality: float | None) -> None:
        if self.images is not None:
            data = {m: self.images.convert(device_id, m, ts, v) for m, v in data.items()}
        self.world.store.put_samples(device_id, [(m, ts, v, quality) for m, v in data.items()])
        for metric, value in data.items():
            self.world.emit(
                EventKind.DEVICE_METRIC,
                device_id,
                metric=metric,
                value=value,
                timestamp=ts,
                quality=quality,
            )

    def webhook(
        self,
        device_id: str,
        data: Mapping[str, Any],
        timestamp: float | None = None,
        quality: float | None = None,
        token: str | None = None,
    ) -> Ingested:
        if not device_id:
            raise InvalidInput("device_id is required", field="device_id")
        if quality is not None and not 0.0 <= quality <= 1.0:
            raise InvalidInput("quality must be between 0 and 1", field="quality")
        ts = self.world.now() if timestamp is None else float(timestamp)
        doc = self.devices.find_doc(device_id)
        if doc is None:
            self._discover(device_id, data, ts, quality)
            return Ingested(device_id, len(data), draft=True)
        expected = doc["connection_config"].get("webhook_token")
        if expected:
            if not token:
                raise Unauthenticated("Webhook token required", resource="webhook")
            if not hmac.compare_digest(str(expected), token):
                raise Unauthenticated("Invalid webhook token", resource="webhook")
        self._record(device_id, data, ts, quality)
        self.devices.seen(device_id)
        return Ingested(device_id, len(data), draft=False)

    def uplink(self, device_id: str, data: Mapping[str, Any], topic: str) -> Ingested | None:
        """A JSON object a device published on ``device/{type}/{id}/uplink``. The twin's own simulated
        sensors publish there too; those messages are not ingested again (``None``)."""
        if device_id in self.sensor_of:
            return None
        metrics = {k: v for k, v in data.items() if k != "timestamp"}
        stamp = data.get("timestamp")
        numeric = isinstance(stamp, int | float) and not isinstance(stamp, bool)
        ts = float(stamp) if numeric and stamp is not None else self.world.now()
        if self.devices.find_doc(device_id) is None:
            self._discover(device_id, metrics, ts, None, via="mqtt", topic=topic)
            return Ingested(device_id, len(metrics), draft=True)
        self._record(device_id, metrics, ts, None)
        self.devices.seen(device_id)
        return Ingested(device_id, len(metrics), draft=False)

    def push_metric(self, device_id: str, metric: str, value: Any, timestamp: float | None) -> float:
        self.devices.doc(device_id)
        if not metric:
            raise InvalidInput("metric is required", field="metric")
        ts = self.world.now() if timestamp is None else float(timestamp)
        self._record(device_id, {metric: value}, ts, None)
        self.devices.seen(device_id)
        return ts

    # Drafts ------------------------------------------------------------------------------------
    def _discover(self, device_id: str, data: Mapping[str, Any], ts: float, quality: float | None,
                  via: str = "webhook", topic: str | None = None) -> None:  # fmt: skip
        now = self.world.now()
        doc = self.drafts.get(device_id)
        if doc is None and not self.onboard.enabled:  # auto-onboarding off: the data only
            self._record(device_id, data, ts, quality)
            return
        if doc is None:
            doc = {
                "id": device_id,
                "device_id": device_id,
                "source": via,
                "original_topic": topic,
                "status": "collecting",
                "sample_count": 0,
                "max_samples": self.onboard.max_samples,
                "discovered_at": now,
                "metrics": {},
            }
            self.world.emit(EventKind.DEVICE_DISCOVERED, device_id, via=via, timestamp=now)
        doc["sample_count"] += 1
        doc["updated_at"] = now
        doc["metrics"].update({m: "string" if v is None else kind_of(v) for m, v in data.items()})
        if doc["sample_count"] >= doc["max_samples"] and doc["status"] != "rejected":
            doc["status"] = "waiting_processing"
        self.drafts.put(device_id, doc)
        self._record(device_id, data, ts, quality)

    def discover(self, device_id: str, data: Mapping[str, Any], source: str) -> bool:
        """A sample for auto-onboarding from elsewhere (an upload): taken unless onboarding is off,
        the device is registered or its draft has all its samples."""
        draft = self.drafts.get(device_id)
        full = draft is not None and draft["sample_count"] >= draft["max_samples"]
        if not self.onboard.enabled or full or self.devices.find_doc(device_id) is not None:
            return False
        self._discover(device_id, data, self.world.now(), None, via=source)
        return True

    def list_drafts(self) -> tuple[Draft, ...]:
        return tuple(_draft(d) for d in self.drafts.values())

    def _draft_doc(self, draft_id: str) -> dict[str, Any]:
        doc = self.drafts.get(draft_id)
        if doc is None:
            raise NotFound(f"Draft {draft_id} not found", resource="draft")
        return doc

    def get_draft(self, draft_id: str) -> Draft:
        return _draft(self._draft_doc(draft_id))

    def reject_draft(self, draft_id: str, reason: str) -> Draft:
        doc = self._draft_doc(draft_id)
        doc.update(status="rejected", error_message=reason, updated_at=self.world.now())
        self.drafts.put(draft_id, doc)
        return _draft(doc)

    def approve_draft(
        self,
        draft_id: str,
        existing_type: str | None = None,
        new_type: DeviceType | None = None,
        device_name: str | None = None,
    ) -> Approval:
        doc = self._draft_doc(draft_id)
        types = self.device_types
        if existing_type:
            device_type = types.get(existing_type).device_type
        else:
            if new_type is None:
                new_type = DeviceType(device_type=f"auto_{doc['device_id']}", name=doc["device_id"])
            if not new_type.metrics:
                metrics = tuple(
                    MetricDef(name, name, DataType(kind)) for name, kind in sorted(doc["metrics"].items())
                )
                new_type = DeviceType(
                    device_type=new_type.device_type,
                    name=new_type.name,
                    description=new_type.description,
                    metrics=metrics,
                )
            device_type = types.create(new_type).device_type
        device_id = doc["device_id"]
        self.devices.create(device_type, device_name or device_id, "webhook", {}, device_id, None)
        self.devices.seen(device_id, at=doc["updated_at"])
        self.drafts.delete(draft_id)
        return Approval(
            original_device_id=device_id,
            system_device_id=device_id,
            device_type=device_type,
            recommended_topic=f"device/{device_type}/{device_id}/uplink",
            message="Device registered successfully",
        )

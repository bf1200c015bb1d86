"""Data push: targets (webhook or MQTT) the server pushes device data to, with delivery logs.

A running ``event_driven`` target receives every sample (the simulated sensors' ticks, pushed
``DEVICE_METRIC`` values) whose source ``device:<id>:<metric>`` matches its
``data_filter.source_patterns`` (``*`` wildcards; ``only_changes`` skips repeated values); an
``interval`` target pushes the latest value of each matching source every ``interval_secs`` of
world time. Items are grouped by ``batch_config.batch_size`` (a partial batch goes out after
``batch_interval_ms``). Each payload becomes an outbox job (real HTTP POST or MQTT publish by the
delivery worker over the target's own link, to the address the target has when it is attempted)
retried with exactly the ``retry_config`` backoff in sim time, and one log entry whose
``attempts`` and ``status`` (pending → retrying → success | failed) follow the job. While the
target's circuit is open its payloads wait (their entries stay ``pending`` or ``retrying``); one
given up counts in ``failed`` like one whose retries ran out.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.errors import NotFound
from hardware.ports.events import Event, EventKind
from hardware.ports.rules import DeliveryResult, DeliveryStats, PushLog, PushTarget
from twin.automation.delivery import Outbox, RetryPolicy
from twin.automation.push_spec import keep_secrets, masked, matches, validate

if TYPE_CHECKING:
    from twin.engine import Engine
    from twin.sensors import SampleObserver, Samples
    from twin.store import Collection

MAX_LOGS_PER_TARGET = 500
EVENT_TYPE = "DeviceMetric"
"""The event type every sample is, for ``schedule.event_types``."""


class DataPush:
    def __init__(self, world: Engine, *, outbox: Outbox, sample_observers: list[SampleObserver]) -> None:
        """``sample_observers``: where the sensor groups' ticks are handed out (this joins them)."""
        self.world = world
        self.outbox = outbox
        self.targets = world.store.collection("push_targets")
        self._log_ids: dict[str, deque[str]] = {}
        """Per target, its log ids oldest first (read from the store on first use)."""
        self.running: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.last_pushed: dict[tuple[str, str], Any] = {}
        self.latest: dict[str, dict[str, Any]] = {}
        self.timers: dict[str, simpy.Process] = {}
        outbox.register("push", self._delivered, self._where)
        for doc in self.targets.values():
            self._arm(doc)
        world.observers.append(self.observe)
        sample_observers.append(self.observe_samples)

    def _uuid(self) -> str:
        return str(uuid.UUID(bytes=self.world.streams.get("automation.push").bytes(16), version=4))

    # Running targets --------------------------------------------------------------------------
    def _arm(self, doc: dict[str, Any]) -> None:
        target_id = doc["id"]
        self.running.pop(target_id, None)
        timer = self.timers.pop(target_id, None)
        if timer is not None and timer.is_alive:
            timer.interrupt("stopped")
        self.batches.pop(target_id, None)
        if not doc["enabled"]:
            return
        self.running[target_id] = doc
        if doc["schedule"]["type"] == "interval":
            self.timers[target_id] = self.world.env.process(
                self._every(target_id, doc["schedule"]["interval_secs"])
            )

    def observe(self, event: Event) -> None:
        if not self.running or event.kind is not EventKind.DEVICE_METRIC:
            return
        data = event.data
        self._sample(event.source, data["metric"], data["value"], data["timestamp"], data.get("quality"))

    def observe_samples(self, samples: Samples) -> None:
        """A sensor group's tick, taken apart only while a target is running."""
        if not self.running:
            return
        ts = self.world.epoch + samples.at
        for device_id, metrics in samples.rows():
            for metric, value in metrics.items():
                self._sample(device_id, metric, value, ts, None)

    def _sample(self, device_id: str, metric: str, value: Any, ts: Any, quality: Any) -> None:
        if isinstance(ts, float) and ts.is_integer():
            ts = int(ts)  # whole Unix seconds, as the server's own timestamps
        source = f"device:{device_id}:{metric}"
        item = {
            "data_source_id": source,
            "device_id": device_id,
            "metric": metric,
            "value": value,
            "timestamp": ts,
            "quality": quality,
        }
        self.latest[source] = item
        for doc in tuple(self.running.values()):
            schedule = doc["schedule"]
            if schedule["type"] != "event_driven":
                continue
            types = schedule.get("event_types") or []
            if types and EVENT_TYPE not in types and "*" not in types:
                continue
            self._offer(doc, item)

    def _offer(self, doc: dict[str, Any], item: dict[str, Any]) -> None:
        data_filter = doc["data_filter"]
        if not matches(data_filter["source_patterns"], item["data_source_id"]):
            return
        key = (doc["id"], item["data_source_id"])
        if data_filter.get("only_changes") and self.last_pushed.get(key, object()) == item["value"]:
            return
        self.last_pushed[key] = item["value"]
        batch = self.batches.setdefault(doc["id"], [])
        batch.append(item)
        size = int(doc["batch_config"]["batch_size"])
        if len(batch) >= size:
            self._flush(doc["id"])
        elif len(batch) == 1:
            delay = float(doc["batch_config"]["batch_interval_ms"]) / 1000
            target = doc["id"]
            self.world.env.timeout(delay).callbacks.append(lambda _ev: self._flush(target))

    def _every(self, target_id: str, interval: float):
        try:
            while True:
                yield self.world.env.timeout(interval)
                yield self.world.env.timeout(0)  # after the samples taken at this same instant
                doc = self.running.get(target_id)
                if doc is None:
                    return
                for item in [
                    i
                    for s, i in sorted(self.latest.items())
                    if matches(doc["data_filter"]["source_patterns"], s)
                ]:
                    self._offer(doc, item)
                self._flush(target_id)
        except simpy.Interrupt:
            return

    def _flush(self, target_id: str) -> None:
        items = self.batches.pop(target_id, None)
        doc = self.running.get(target_id)
        if not items or doc is None:
            return
        payload = self._payload(doc, items)
        self._send(doc, payload, items[0]["data_source_id"] if len(items) == 1 else None, items[0])

    def _payload(self, doc: dict[str, Any], items: list[dict[str, Any]]) -> Any:
        template = doc.get("template")
        if template and len(items) == 1:
            text = template
            for key, value in items[0].items():
                text = text.replace(
                    "{{" + key + "}}", json.dumps(value) if not isinstance(value, str) else value
                )
            return text
        if doc["batch_config"]["format"] == "nested":
            devices: dict[str, dict[str, Any]] = {}
            for item in items:
                devices.setdefault(item["device_id"], {})[item["metric"]] = item["value"]
            return {"devices": devices, "timestamp": items[-1]["timestamp"], "count": len(items)}
        if int(doc["batch_config"]["batch_size"]) == 1:
            return items[0]
        return {"items": items, "count": len(items)}

    def _send(self, doc: dict[str, Any], payload: Any, source: str | None, first: dict[str, Any]) -> str:
        log_id = self._uuid()
        now = self.world.now()
        text = _text(payload)
        self._log(
            {
                "id": log_id,
                "target_id": doc["id"],
                "status": "pending",
                "data_source_id": source,
                "payload_sent": text,
                "response": None,
                "attempts": 0,
                "created_at": now,
                "completed_at": None,
                "error": None,
            }
        )
        transport, config = _transport(doc, first)
        retry = RetryPolicy(
            int(doc["retry_config"]["max_retries"]),
            float(doc["retry_config"]["backoff_secs"]),
            float(doc["retry_config"]["max_backoff_secs"]),
        )
        # The payload travels as the exact text logged: what is delivered is what the log shows.
        context = {"device_id": first.get("device_id"), "metric": first.get("metric")}
        self.outbox.enqueue("push", doc["id"], transport, config, text, retry, ref=log_id, context=context)
        return log_id

    def _where(self, job: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """Where a payload goes now: the target's current settings."""
        doc = self.targets.get(job["owner_id"])
        if doc is None or job.get("context") is None:
            return None
        return _transport(doc, job["context"])

    def _logs(self, target_id: str) -> tuple[Collection, deque[str]]:
        """A target's log entries live in their own collection, bounded to the newest ones."""
        logs = self.world.store.collection(f"push_logs/{target_id}")
        ids = self._log_ids.get(target_id)
        if ids is None:
            ids = self._log_ids[target_id] = deque(key for key, _ in logs.items())
        return logs, ids

    def _log(self, entry: dict[str, Any]) -> None:
        logs, ids = self._logs(entry["target_id"])
        logs.put(entry["id"], entry)
        ids.append(entry["id"])
        while len(ids) > MAX_LOGS_PER_TARGET:
            logs.delete(ids.popleft())

    def _delivered(self, job: dict[str, Any], result: DeliveryResult, final: bool) -> None:
        logs, _ = self._logs(job["owner_id"])
        entry = logs.get(job["ref"])
        if entry is not None:
            entry.update(
                status="success" if result.success else ("failed" if final else "retrying"),
                attempts=result.attempts,
                response=result.message if result.success else entry["response"],
                error=None if result.success else result.message,
                completed_at=result.at if final else None,
            )
            logs.put(entry["id"], entry)
        doc = self.targets.get(job["owner_id"])
        if doc is not None and final:
            key = "pushed" if result.success else "failed"
            doc[key] = doc.get(key, 0) + 1
            self.targets.put(doc["id"], doc)
            if doc["id"] in self.running:
                self.running[doc["id"]] = doc

    # CRUD --------------------------------------------------------------------------------------
    def doc(self, target_id: str) -> dict[str, Any]:
        doc = self.targets.get(target_id)
        if doc is None:
            raise NotFound(f"Push target {target_id} not found", resource="push_target")
        return doc

    def list_targets(self) -> list[PushTarget]:
        return [_target(d) for d in self.targets.values()]

    def get_target(self, target_id: str) -> PushTarget:
        return _target(self.doc(target_id))

    def create_target(self, spec: Mapping[str, Any]) -> PushTarget:
        now = self.world.now()
        doc = {
            **validate(spec),
            "id": self._uuid(),
            "created_at": now,
            "updated_at": now,
            "pushed": 0,
            "failed": 0,
        }
        self.targets.put(doc["id"], doc)
        self._arm(doc)
        return _target(doc)

    def update_target(self, target_id: str, changes: Mapping[str, Any]) -> PushTarget:
        old = self.doc(target_id)
        merged = {
            k: old[k]
            for k in (
                "name",
                "target_type",
                "config",
                "schedule",
                "data_filter",
                "template",
                "enabled",
                "retry_config",
                "batch_config",
            )
        }
        merged.update({k: v for k, v in changes.items() if v is not None})
        merged["config"] = keep_secrets(merged["config"] or {}, old["config"])
        doc = {**old, **validate(merged), "updated_at": self.world.now()}
        self.targets.put(target_id, doc)
        self._arm(doc)
        if (doc["target_type"], doc["config"]) != (old["target_type"], old["config"]):
            self.outbox.retarget("push", target_id)
        return _target(doc)

    def delete_target(self, target_id: str) -> None:
        doc = self.doc(target_id)
        self._arm({**doc, "enabled": False})
        self.targets.delete(target_id)
        self.outbox.cancel_owner("push", target_id)
        logs, ids = self._logs(target_id)
        for key in ids:
            logs.delete(key)
        del self._log_ids[target_id]

    def start_target(self, target_id: str) -> PushTarget:
        return self._set_enabled(target_id, True)

    def stop_target(self, target_id: str) -> PushTarget:
        return self._set_enabled(target_id, False)

    def _set_enabled(self, target_id: str, enabled: bool) -> PushTarget:
        doc = {**self.doc(target_id), "enabled": enabled, "updated_at": self.world.now()}
        self.targets.put(target_id, doc)
        self._arm(doc)
        return _target(doc)

    async def test_target(self, target_id: str) -> PushLog:
        doc = self.doc(target_id)
        payload = {
            "test": True,
            "target_id": target_id,
            "target_name": doc["name"],
            "timestamp": self.world.now(),
            "message": "Data push test",
        }
        transport, config = _transport(doc, {"device_id": "test", "metric": "test"})
        log_id, created = self._uuid(), self.world.now()
        result = await self.outbox.send_now("push", target_id, transport, config, payload)
        entry = {
            "id": log_id,
            "target_id": target_id,
            "status": "success" if result.success else "failed",
            "data_source_id": None,
            "payload_sent": _text(payload),
            "response": result.message if result.success else None,
            "attempts": 1,
            "created_at": created,
            "completed_at": self.world.now(),
            "error": None if result.success else result.message,
        }
        if self.targets.get(target_id) is not None:
            self._log(entry)
        return _log(entry)

    def target_logs(self, target_id: str, limit: int = 100) -> list[PushLog]:
        self.doc(target_id)
        logs, _ = self._logs(target_id)
        return [_log(d) for d in reversed(logs.values())][: max(1, limit)]

    def delivery_stats(self) -> list[DeliveryStats]:
        return self.outbox.stats("push", [d["id"] for d in self.targets.values()])


def _transport(doc: dict[str, Any], item: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    config = doc["config"]
    if doc["target_type"] == "webhook":
        return "http", {
            "url": config["url"],
            "headers": config.get("headers") or {},
            "method": config.get("method", "POST"),
        }
    topic = (
        str(config["topic"])
        .replace("{device_id}", str(item.get("device_id", "")))
        .replace("{metric}", str(item.get("metric", "")))
    )
    out = {k: config[k] for k in ("broker_url", "host", "port", "qos") if k in config}
    return "mqtt", {**out, "topic": topic}


def _text(payload: Any) -> str:
    return payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))


def _log(d: dict[str, Any]) -> PushLog:
    return PushLog(**d)


def _target(d: dict[str, Any]) -> PushTarget:
    return PushTarget(
        id=d["id"],
        name=d["name"],
        target_type=d["target_type"],
        config=masked(d["config"]),  # secrets are write-only
        schedule=d["schedule"],
        data_filter=d["data_filter"],
        retry_config=d["retry_config"],
        batch_config=d["batch_config"],
        enabled=d["enabled"],
        created_at=d["created_at"],
        updated_at=d["updated_at"],
        template=d.get("template"),
        pushed=d.get("pushed", 0),
        failed=d.get("failed", 0),
    )

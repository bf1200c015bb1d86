"""Bringing devices in, over the world (:class:`hardware.ports.provisioning.Provisioning`).

Drafts are the ingest's durable ``device_drafts`` documents. An analysis (asked for, or due once a
draft has its ``max_samples``) runs the server's fast, model-free inference on the draft's latest
values: metric paths, data and semantic types, a device category, and a type id (an existing
type whose signature matches, else ``auto_<device>``); a new type's signature is registered
(durably, in ``type_signatures``). The "LLM" enhancement is deterministic: display names in
Chinese, descriptions and units by semantic type, applied after the draft is answered as it was.
The auto-onboarding configuration lives with the ingest (in memory, as on the server).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hardware.ports.devices import DeviceType
from hardware.ports.errors import InternalError, InvalidInput, NotFound
from hardware.ports.provisioning import BleRequest, BrokerAddress, OnboardConfig
from twin.automation import device_gen
from twin.automation.server import automation_of

if TYPE_CHECKING:
    from twin.store import Collection
    from twin.world import World

RECOMMENDATIONS = [
    "Fill in the device name and description during registration",
    "Review the generated metrics for accuracy",
    "Test the device with actual data",
]
SIMILARITY = 0.7


def _debug(name: str) -> str:
    """Rust's ``{:?}`` of a unit enum variant named in snake case: ``co2`` → ``Co2``."""
    return "".join(p.capitalize() for p in name.split("_"))


def signature(pairs: list[tuple[str, str]], category: str) -> tuple[str, list[list[str]]]:
    ordered = sorted([list(p) for p in pairs])
    digest = hashlib.sha256(json.dumps([ordered, category]).encode()).hexdigest()[:16]
    return digest, ordered


def jaccard(a: set[tuple[str, str]], b: set[tuple[str, str]]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


class TwinProvisioning:
    def __init__(self, world: World) -> None:
        self.world = world

    @property
    def _drafts(self) -> Collection:
        return automation_of(self.world).ingest.drafts

    def _signatures(self) -> Collection:
        return self.world.store.collection("type_signatures")

    def _doc(self, device_id: str) -> dict[str, Any]:
        doc = self._drafts.get(device_id)
        if doc is None:
            raise NotFound(f"Draft device '{device_id}' not found", resource="draft")
        if doc["status"] == "waiting_processing" and doc.get("analysis") is None:
            self._analyze(doc)  # the analysis the server runs when the last sample arrives
        return doc

    # Drafts -------------------------------------------------------------------------------------
    def dto(self, doc: dict[str, Any]) -> dict[str, Any]:
        analysis = doc.get("analysis")
        generated = None
        if analysis is not None:
            metrics = [{k: m[k] for k in ("name", "path", "semantic_type", "display_name")} for m in analysis]
            kinds = {m["semantic_type"] for m in analysis}
            insights = (
                ["Device measures both temperature and humidity"]
                if {"temperature", "humidity"} <= kinds
                else []
            )
            generated = {
                "device_type": doc["generated_type"], "name": "", "description": "", "category": "unknown",
                "metrics": metrics,
                "summary": {
                    "samples_analyzed": doc["sample_count"], "fields_discovered": len(metrics),
                    "metrics_generated": len(metrics), "inferred_category": "Unknown", "insights": insights,
                    "warnings": [], "recommendations": list(RECOMMENDATIONS),
                },
            }  # fmt: skip
        return {
            "id": doc["id"], "device_id": doc["device_id"], "source": doc["source"],
            "original_topic": doc.get("original_topic"), "status": doc["status"],
            "sample_count": doc["sample_count"], "max_samples": doc["max_samples"],
            "generated_type": generated,
            "discovered_at": int(doc["discovered_at"]), "updated_at": int(doc["updated_at"]),
            "error_message": doc.get("error_message"), "user_name": doc.get("user_name"),
        }  # fmt: skip

    def draft(self, device_id: str) -> Mapping[str, Any]:
        return self.dto(self._doc(device_id))

    def drafts(self) -> list[Mapping[str, Any]]:
        return [self.dto(self._doc(d["id"])) for d in self._drafts.values()]

    def update_draft(self, device_id: str, name: str | None, description: str | None) -> None:
        doc = self._drafts.get(device_id)
        if doc is None:
            raise InternalError(f"Invalid data: Draft not found: {device_id}")
        if name is not None:
            doc["user_name"] = name
        if description is not None:
            doc["user_description"] = description
        doc["updated_at"] = self.world.now()
        self._drafts.put(device_id, doc)

    def analyze(self, device_id: str) -> None:
        doc = self._doc(device_id)
        if not doc["sample_count"]:
            raise InvalidInput("No samples available for analysis")
        self._analyze(doc)

    def _analyze(self, doc: dict[str, Any]) -> None:
        latest = self.world.store.latest_samples(doc["device_id"])
        sample = {m: latest[m][1] for m in doc.get("metrics", {}) if m in latest}
        found = device_gen.discovered([sample])
        if not found:
            return  # the server's analysis fails and leaves the draft as it was
        pairs = [(_debug(m["semantic_type"]), _debug(m["data_type"])) for m in found]
        category = device_gen.category_of([(m["path"], m["semantic_type"]) for m in found])
        digest, ordered = signature(pairs, category)
        signatures = self._signatures()
        match = (signatures.get(digest) or {}).get("device_type") or self._similar(set(pairs), category)
        type_id = match or f"auto_{doc['device_id'].replace('-', '_')}"
        if match is None:
            signatures.put(digest, {"device_type": type_id, "pairs": ordered, "category": category})
        for m in found:
            m["description"] = ""
        doc.update(
            analysis=found, generated_type=type_id, status="waiting_processing", updated_at=self.world.now()
        )
        self._drafts.put(doc["id"], doc)

    def _similar(self, pairs: set[tuple[str, str]], category: str) -> str | None:
        best, score = None, SIMILARITY
        for stored in self._signatures().values():
            if stored["category"] != category:
                continue
            s = jaccard(pairs, {tuple(p) for p in stored["pairs"]})
            if s >= score:
                best, score = stored["device_type"], s
        return best

    def enhance(self, device_id: str) -> Mapping[str, Any]:
        doc = self._doc(device_id)
        if doc.get("analysis") is None:
            raise InvalidInput("Draft device has no generated type yet. Please analyze it first.")
        answer = self.dto(doc)
        for m in doc["analysis"]:
            semantic = m["semantic_type"]
            name = device_gen.ZH_NAMES.get(semantic, m["display_name"])
            m.update(
                display_name=name, description=f"{name}读数", unit=device_gen.SEMANTIC_UNITS.get(semantic)
            )
        doc["updated_at"] = self.world.now()
        self._drafts.put(device_id, doc)
        return answer

    def suggest_types(self, device_id: str) -> Mapping[str, Any]:
        doc = self._doc(device_id)
        if doc.get("analysis") is None:
            raise InvalidInput("Draft device has no generated type. Please analyze it first.")
        found = doc["analysis"]
        pairs = {(_debug(m["semantic_type"]), _debug(m["data_type"])) for m in found}
        category = device_gen.category_of([(m["path"], m["semantic_type"]) for m in found])
        exact = (self._signatures().get(signature(list(pairs), category)[0]) or {}).get("device_type")
        rows: list[dict[str, Any]] = []
        for t in automation_of(self.world).device_types.list():
            theirs = {(_debug(device_gen.semantic_of(m.name)), _debug(m.data_type.kind)) for m in t.metrics}
            rows.append({
                "device_type": t.device_type, "name": t.name, "description": t.description,
                "match_score": int(jaccard(pairs, theirs) * 100), "is_exact_match": exact == t.device_type,
                "metric_count": len(t.metrics),
            })  # fmt: skip
        rows.sort(key=lambda r: -r["match_score"])
        return {"suggestions": rows, "exact_match": exact}

    def type_signatures(self) -> Mapping[str, str]:
        return {digest: doc["device_type"] for digest, doc in self._signatures().items()}

    def cleanup(self) -> int:
        cutoff = self.world.now() - self.config().draft_retention_secs
        old = [d["id"] for d in self._drafts.values() if d["updated_at"] < cutoff]
        for draft_id in old:
            self._drafts.delete(draft_id)
        return len(old)

    def config(self) -> OnboardConfig:
        return automation_of(self.world).ingest.onboard

    def set_config(self, config: OnboardConfig) -> None:
        automation_of(self.world).ingest.onboard = config

    def upload(self, device_id: str | None, source: str | None, samples: Sequence[Any]) -> tuple[str, int]:
        if not device_id:
            raw = self.world.streams.get("automation.drafts").bytes(16)
            device_id = f"unknown_{str(uuid.UUID(bytes=raw, version=4))[:8]}"
        taken = 0
        for sample in samples:
            if isinstance(sample, dict) and automation_of(self.world).ingest.discover(
                device_id, sample, source or "manual_upload"
            ):
                taken += 1
        return device_id, taken

    # Generation ---------------------------------------------------------------------------------
    def generate_mdl(
        self, device_name: str, description: str, uplink_example: str, downlink_example: str
    ) -> DeviceType:
        return device_gen.generate_mdl(device_name, description, uplink_example, downlink_example)

    def generate_from_samples(
        self, device_id: str | None, manufacturer: str | None, samples: Sequence[Any], min_coverage: float
    ) -> Mapping[str, Any]:
        if not automation_of(self.world).llm.list_backends():
            raise InternalError("No active LLM backend. Please configure an LLM backend first.")
        if not samples:
            raise InvalidInput("No valid samples provided")
        device_id = device_id or "unknown-device"
        found = device_gen.discovered(list(samples), min_coverage)
        category = device_gen.category_of([(m["path"], m["semantic_type"]) for m in found])
        maker = manufacturer or "Generic"
        name = f"{maker} {device_id}" if len(device_id) <= 20 else f"{maker} {category} Device"
        summary = ", ".join(m["display_name"] for m in found[:5]) or "various metrics"
        metrics = [
            {"name": m["name"], "path": m["path"], "display_name": m["display_name"], "description": "",
             "data_type": _debug(m["data_type"]), "semantic_type": _debug(m["semantic_type"]),
             "unit": m["unit"],
             "readable": True, "writable": False, "confidence": 1.0}
            for m in found
        ]  # fmt: skip
        return {
            "id": f"auto-generated-{device_id}", "name": name,
            "description": f"{maker} {category} device. Supports monitoring of: {summary}.",
            "category": _debug(category), "manufacturer": manufacturer or "Unknown", "metrics": metrics,
            "commands": [], "confidence": 1.0,
        }  # fmt: skip

    def ble_provision(
        self, request: BleRequest, brokers: Callable[[str], BrokerAddress]
    ) -> Mapping[str, Any]:
        if automation_of(self.world).device_types.find(request.device_type) is None:
            raise InvalidInput(f"Unknown device_type: {request.device_type}", field="device_type")
        broker = brokers(request.broker_id)
        devices = automation_of(self.world).devices
        device_id = request.sn.lower().replace("-", "_")
        existing = devices.find_doc(device_id)
        device_type = existing["device_type"] if existing else request.device_type
        prefix = f"device/{device_type}/{device_id}"
        mqtt = {"host": broker.host, "port": broker.port, "username": broker.username,
                "password": broker.password, "topic_prefix": prefix, "client_id": device_id}  # fmt: skip
        topics = {"telemetry_topic": f"{prefix}/uplink", "command_topic": f"{prefix}/downlink"}
        stamp = datetime.fromtimestamp(self.world.now(), UTC).isoformat()
        if existing is not None:
            if not request.resolve_only:
                config = {
                    **existing["connection_config"],
                    **topics,
                    "ble_reprovisioned": True,
                    "provisioned_at": stamp,
                }
                keep = {"adapter_id": existing.get("adapter_id"),
                        "offline_timeout_secs": existing.get("offline_timeout_secs")}  # fmt: skip
                devices.update(
                    device_id, name=request.device_name, adapter_type=None, connection_config=config, **keep
                )
            return {"device_id": device_id, "mqtt_config": mqtt, "already_exists": True}
        if not request.resolve_only:
            config = {**topics, "ble_provisioned": True, "provisioned_at": stamp}
            devices.create(request.device_type, request.device_name, "mqtt", config, device_id, None)
        return {"device_id": device_id, "mqtt_config": mqtt}

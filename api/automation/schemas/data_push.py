"""Wire shapes of data push targets and their delivery logs (release 0.9.24)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from hardware.ports.rules import PushLog, PushTarget


class TargetRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    target_type: str
    config: dict[str, Any]
    schedule: dict[str, Any] | None = None
    data_filter: dict[str, Any] | None = None
    template: str | None = None
    enabled: bool | None = None
    retry_config: dict[str, Any] | None = None
    batch_config: dict[str, Any] | None = None

    def spec(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class TargetUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str | None = None
    target_type: str | None = None
    config: dict[str, Any] | None = None
    schedule: dict[str, Any] | None = None
    data_filter: dict[str, Any] | None = None
    template: str | None = None
    enabled: bool | None = None
    retry_config: dict[str, Any] | None = None
    batch_config: dict[str, Any] | None = None

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


def target(t: PushTarget) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "target_type": t.target_type,
        "config": dict(t.config),
        "schedule": dict(t.schedule),
        "data_filter": dict(t.data_filter),
        "template": t.template,
        "enabled": t.enabled,
        "retry_config": dict(t.retry_config),
        "batch_config": dict(t.batch_config),
        "created_at": int(t.created_at),
        "updated_at": int(t.updated_at),
        "stats": {"pushed": t.pushed, "failed": t.failed},
    }


def created(t: PushTarget) -> dict[str, Any]:
    return {"id": t.id, "name": t.name, "target_type": t.target_type, "enabled": t.enabled}


def log(entry: PushLog) -> dict[str, Any]:
    return {
        "id": entry.id,
        "target_id": entry.target_id,
        "status": entry.status,
        "data_source_id": entry.data_source_id,
        "payload_sent": entry.payload_sent,
        "response": entry.response,
        "attempts": entry.attempts,
        "created_at": int(entry.created_at),
        "completed_at": None if entry.completed_at is None else int(entry.completed_at),
        "error": entry.error,
    }


def stats(targets: list[PushTarget]) -> dict[str, Any]:
    by_type: dict[str, int] = {}
    for t in targets:
        by_type[t.target_type] = by_type.get(t.target_type, 0) + 1
    return {
        "total_targets": len(targets),
        "enabled_targets": sum(t.enabled for t in targets),
        "total_pushed": sum(t.pushed for t in targets),
        "total_failed": sum(t.failed for t in targets),
        "by_type": by_type,
    }

"""Snapshots of the whole world (clock, random streams, entities, durable state): take one with an
optional label, list them, restore one, delete one. The twin keeps the newest 32."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from api.control.deps import Console, Control, clock_json, plain

router = APIRouter(tags=["snapshots"])


class SnapshotBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = Field(default="", max_length=200, description="what to call it in the list")


@router.post("/snapshots")
async def take(control: Control, body: SnapshotBody | None = None) -> dict:
    """Take a snapshot; ``{"label": "..."}`` names it (the body is optional)."""
    return plain(control.snapshot(body.label if body else ""))


@router.get("/snapshots")
async def listing(control: Console) -> dict:
    """The snapshots kept, oldest first."""
    return {"snapshots": [plain(info) for info in control.snapshots()]}


@router.post("/snapshots/{snapshot_id}/restore")
async def restore(snapshot_id: str, control: Control) -> dict:
    return clock_json(control.restore(snapshot_id))


@router.delete("/snapshots/{snapshot_id}")
async def delete(snapshot_id: str, control: Console) -> dict:
    """Forget a snapshot; 404 for an unknown id."""
    control.delete_snapshot(snapshot_id)
    return {"deleted": snapshot_id}

"""Scenario actions (``/actions``), a scripted client's sleep on the world clock, and the request
journal with the values its filters take."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from api.control.deps import Actions, JournalView, clock_json
from hardware.ports.errors import NotFound

router = APIRouter(tags=["actions"])

FILTER_WINDOW = 20_000
"""``/journal/filters`` reads the values of the newest this many requests."""


class SleepBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = Field(ge=0)


class ActionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    params: dict[str, Any] = Field(default_factory=dict)
    for_: float | None = Field(default=None, gt=0, alias="for", description="undo after this many world s")


@router.post("/clock/sleep")
async def sleep(body: SleepBody, control: Actions) -> dict:
    """A scripted client's pause on the world clock: in step mode it moves time by ``seconds``,
    in realtime mode it answers once that much world time has passed."""
    return clock_json(await control.sleep_world(body.seconds))


@router.get("/actions")
async def list_actions(request: Request, control: Actions, since_id: int = Query(default=0, ge=0)) -> dict:
    """Every action with its parameters' JSON Schema, the ids of the active ones, and the log of
    recent ones (after ``since_id``) with when each started, is due to end and ended."""
    return {
        "actions": request.app.state.actions,
        "active": control.active_actions(),
        "log": control.action_log(since_id),
    }


@router.post("/actions/{name}")
async def run_action(name: str, control: Actions, body: ActionBody | None = None) -> dict:
    body = body or ActionBody()
    return control.run_action(name, body.params, body.for_)


@router.delete("/actions/{action_id}")
async def undo_action(action_id: int, control: Actions) -> dict:
    if not control.undo_action(action_id):
        raise NotFound(f"no active action {action_id}", resource="action")
    return {"undone": action_id}


def _journal(request: Request) -> JournalView | None:
    return request.app.state.journal


@router.get("/journal")
async def get_journal(
    request: Request,
    since: int = Query(default=0, ge=0),
    server: str | None = None,
    route: str | None = None,
    status: int | None = None,
    client: str | None = None,
    limit: int = Query(default=1000, ge=1, le=10_000),
) -> dict:
    """Journalled requests with ``seq > since``, oldest first; page on with ``next_since``. Each
    names the transport fault that shaped its answer (``fault``), if one did."""
    journal = _journal(request)
    if journal is None:
        return {"entries": [], "total": 0, "dropped": 0, "next_since": since}
    entries = journal.select(
        since=since, server=server, route=route, status=status, client=client, limit=limit
    )
    return {
        "entries": [e.to_json() for e in entries],
        "total": len(journal),
        "dropped": journal.dropped,
        "next_since": entries[-1].seq if entries else since,
    }


@router.get("/journal/filters")
async def journal_filters(request: Request) -> dict:
    """The servers, routes, statuses and clients of the newest :data:`FILTER_WINDOW` requests, and
    the newest ``seq`` (a reader's ``since`` to follow what comes next)."""
    journal = _journal(request)
    if journal is None:
        return {"servers": [], "routes": [], "statuses": [], "clients": [], "last_seq": 0}
    last = journal.last_seq
    values = journal.distinct(since=max(0, last - FILTER_WINDOW))
    return {
        "servers": sorted(values["server"]),
        "routes": sorted(values["route"]),
        "statuses": sorted(values["status"]),
        "clients": sorted(values["client"]),
        "last_seq": last,
    }

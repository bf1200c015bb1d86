"""The twin's control plane (127.0.0.1:9380): clock, reset, snapshot/restore, seed, faults,
scenario actions and the request journal.

Separate from both vendor APIs. Answers plain JSON; errors are ``{"error": {"code", "message"}}``
with the symbolic domain code.
"""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from api.automation.ratelimit import RateLimiter
from api.control import demo
from api.faults import FaultSet
from hardware.ports.control import WorldControl
from hardware.ports.errors import DomainError, ErrorCode, NotFound
from hardware.ports.types import ClockState

STATUS = {
    ErrorCode.INVALID_INPUT: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpeedBody(_Body):
    speed: float = Field(gt=0)


class AdvanceBody(_Body):
    seconds: float = Field(ge=0)


class RunToBody(_Body):
    sim_time: float = Field(ge=0)


class ResetBody(_Body):
    seed: int | None = Field(default=None, ge=0)


class SeedBody(_Body):
    seed: int = Field(ge=0)


class StormBody(_Body):
    limit: int = Field(ge=1, description="requests per minute per client while the storm lasts")
    seconds: float = Field(gt=0, description="world seconds")


class LatencyBody(_Body):
    seconds: float = Field(ge=0)
    path_prefix: str = "/"
    jitter: float = Field(default=0.0, ge=0)


class SleepBody(_Body):
    seconds: float = Field(ge=0)


class ActionBody(_Body):
    params: dict[str, Any] = Field(default_factory=dict)
    for_: float | None = Field(default=None, gt=0, alias="for", description="undo after this many world s")


class ActionControl(Protocol):
    """What the control plane needs beyond the port: scenario actions and the client sleep."""

    def run_action(
        self, name: str, params: dict[str, Any], for_seconds: float | None = None
    ) -> dict[str, Any]: ...

    def undo_action(self, action_id: int) -> bool: ...

    def active_actions(self) -> list[int]: ...

    async def sleep_world(self, seconds: float) -> ClockState: ...


class JournalView(Protocol):
    dropped: int

    def __len__(self) -> int: ...

    def select(
        self,
        *,
        since: int = 0,
        server: str | None = None,
        route: str | None = None,
        status: int | None = None,
        limit: int = 1000,
    ) -> list[Any]: ...


def clock_json(state: ClockState) -> dict[str, Any]:
    return {
        "mode": state.mode.value,
        "speed": state.speed,
        "paused": state.paused,
        "sim_time": state.sim_time,
        "epoch": state.epoch,
        "unix_time": state.unix_time,
    }


async def _control(request: Request) -> WorldControl:
    return request.app.state.control


async def _faults(request: Request, server: str) -> FaultSet:
    faults = request.app.state.faults.get(server)
    if faults is None:
        raise NotFound(f"no server named {server!r}", resource="server")
    return faults


Control = Annotated[WorldControl, Depends(_control)]
ServerFaults = Annotated[FaultSet, Depends(_faults)]


async def _limiter(request: Request, server: str) -> RateLimiter:
    limiter = request.app.state.limiters.get(server)
    if limiter is None:
        raise NotFound(f"no rate-limited server named {server!r}", resource="server")
    return limiter


Limiter = Annotated[RateLimiter, Depends(_limiter)]


def limiter_json(limiter: RateLimiter) -> dict[str, Any]:
    return {
        "limit": limiter.limit,
        "base_limit": limiter.base_limit,
        "storm_until": limiter.storm_until(),
        "rejected": limiter.rejected,
    }


def create_app(
    control: WorldControl,
    faults: dict[str, FaultSet] | None = None,
    limiters: dict[str, RateLimiter] | None = None,
    *,
    journal: JournalView | None = None,
    actions: list[dict[str, Any]] | None = None,
) -> FastAPI:
    app = FastAPI(title="Twin control plane", docs_url="/docs", redoc_url=None)
    app.state.control = control
    app.state.faults = faults or {}
    app.state.limiters = limiters or {}
    app.state.journal = journal
    app.state.actions = actions or []

    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        body = {"error": {"code": exc.code.value, "message": exc.message}}
        return JSONResponse(body, status_code=STATUS.get(exc.code, 500))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid value')}"
        return JSONResponse({"error": {"code": ErrorCode.INVALID_INPUT.value, "message": message}}, 400)

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/clock")
    async def clock(control: Control) -> dict:
        return clock_json(control.clock_state())

    @app.post("/clock/pause")
    async def pause(control: Control) -> dict:
        return clock_json(control.pause())

    @app.post("/clock/resume")
    async def resume(control: Control) -> dict:
        return clock_json(control.resume())

    @app.put("/clock/speed")
    async def speed(body: SpeedBody, control: Control) -> dict:
        return clock_json(control.set_speed(body.speed))

    @app.post("/clock/advance")
    async def advance(body: AdvanceBody, control: Control) -> dict:
        return clock_json(control.advance(body.seconds))

    @app.post("/clock/run-to")
    async def run_to(body: RunToBody, control: Control) -> dict:
        return clock_json(control.run_to(body.sim_time))

    @app.post("/reset")
    async def reset(control: Control, body: ResetBody | None = None) -> dict:
        return clock_json(control.reset(body.seed if body else None))

    @app.get("/seed")
    async def get_seed(control: Control) -> dict:
        return {"seed": control.seed()}

    @app.put("/seed")
    async def set_seed(body: SeedBody, control: Control) -> dict:
        state = control.reset(body.seed)
        return {"seed": control.seed(), "clock": clock_json(state)}

    @app.post("/snapshots")
    async def snapshot(control: Control) -> dict:
        info = control.snapshot()
        return {"id": info.id, "sim_time": info.sim_time, "seed": info.seed}

    @app.post("/snapshots/{snapshot_id}/restore")
    async def restore(snapshot_id: str, control: Control) -> dict:
        return clock_json(control.restore(snapshot_id))

    @app.get("/faults")
    async def list_faults(request: Request) -> dict:
        return {name: {**fs.describe()} for name, fs in request.app.state.faults.items()}

    @app.post("/faults/{server}/latency")
    async def add_latency(body: LatencyBody, faults: ServerFaults) -> dict:
        return {"latency": faults.add_latency(body.seconds, body.path_prefix, body.jitter)}

    @app.delete("/faults/{server}")
    async def clear_faults(faults: ServerFaults) -> dict:
        faults.clear()
        return {"cleared": True}

    @app.get("/ratelimit/{server}")
    async def rate_limit(limiter: Limiter) -> dict:
        return limiter_json(limiter)

    @app.post("/ratelimit/{server}/storm")
    async def storm(body: StormBody, limiter: Limiter) -> dict:
        """A rate-limit storm: the limit drops to ``limit`` for ``seconds`` of world time."""
        limiter.storm(body.limit, body.seconds)
        return limiter_json(limiter)

    @app.delete("/ratelimit/{server}/storm")
    async def calm(limiter: Limiter) -> dict:
        limiter.calm()
        return limiter_json(limiter)

    @app.post("/clock/sleep")
    async def sleep(body: SleepBody, control: Control) -> dict:
        """A scripted client's pause on the world clock: in step mode it moves time by ``seconds``,
        in realtime mode it answers once that much world time has passed."""
        return clock_json(await _actions(control).sleep_world(body.seconds))

    @app.get("/actions")
    async def list_actions(request: Request, control: Control) -> dict:
        return {"actions": request.app.state.actions, "active": _actions(control).active_actions()}

    @app.post("/actions/{name}")
    async def run_action(name: str, control: Control, body: ActionBody | None = None) -> dict:
        body = body or ActionBody()
        return _actions(control).run_action(name, body.params, body.for_)

    @app.delete("/actions/{action_id}")
    async def undo_action(action_id: int, control: Control) -> dict:
        if not _actions(control).undo_action(action_id):
            raise NotFound(f"no active action {action_id}", resource="action")
        return {"undone": action_id}

    @app.get("/journal")
    async def get_journal(
        request: Request,
        since: int = Query(default=0, ge=0),
        server: str | None = None,
        route: str | None = None,
        status: int | None = None,
        limit: int = Query(default=1000, ge=1, le=10_000),
    ) -> dict:
        """Journalled requests with ``seq > since``, oldest first; page on with ``next_since``."""
        journal: JournalView | None = request.app.state.journal
        if journal is None:
            return {"entries": [], "total": 0, "dropped": 0, "next_since": since}
        entries = journal.select(since=since, server=server, route=route, status=status, limit=limit)
        return {
            "entries": [e.to_json() for e in entries],
            "total": len(journal),
            "dropped": journal.dropped,
            "next_since": entries[-1].seq if entries else since,
        }

    app.include_router(demo.router)
    return app


def _actions(control: WorldControl) -> ActionControl:
    if not hasattr(control, "run_action"):
        raise NotFound("this backend runs no scenario actions", resource="action")
    return control  # type: ignore[return-value]

"""The twin's control plane (127.0.0.1:9380): clock, reset, snapshot/restore, seed, faults,
scenario actions, the request journal, the fleet's readings, scenarios run on the live world, and
the console (``GET /``) that drives all of it through these same routes.

Separate from both vendor APIs. Answers plain JSON; errors are ``{"error": {"code", "message"}}``
with the symbolic domain code. The routes of one area each are in :mod:`api.control.actions`
(actions, client sleep, journal), :mod:`api.control.fleet` (sensors, cameras, live video) and
:mod:`api.control.scenarios`.
"""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from api.automation.ratelimit import RateLimiter
from api.control import actions, console, demo, docs, fleet, scenarios, snapshots
from api.control.deps import Control, JournalView, clock_json, error_response, has
from api.faults import FaultSet
from hardware.ports.control import WorldControl
from hardware.ports.errors import DomainError, ErrorCode, NotFound
from hardware.ports.types import ClockMode


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


class ModeBody(_Body):
    mode: ClockMode


async def _faults(request: Request, server: str) -> FaultSet:
    faults = request.app.state.faults.get(server)
    if faults is None:
        raise NotFound(f"no server named {server!r}", resource="server")
    return faults


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


class PublisherView(Protocol):
    """The fleet publisher (``twin run --publish-fleet-to``), as the control plane sees it."""

    def status(self) -> dict[str, Any]: ...


ROUTERS = (
    actions.router,
    fleet.router,
    scenarios.router,
    snapshots.router,
    console.router,
    demo.router,
    docs.router,
)


def create_app(
    control: WorldControl,
    faults: dict[str, FaultSet] | None = None,
    limiters: dict[str, RateLimiter] | None = None,
    *,
    journal: JournalView | None = None,
    actions: list[dict[str, Any]] | None = None,
) -> FastAPI:
    app = FastAPI(title="Twin control plane", docs_url=None, redoc_url=None)
    app.state.control = control
    app.state.faults = faults or {}
    app.state.limiters = limiters or {}
    app.state.journal = journal
    app.state.actions = actions or []
    app.state.publisher = None  # a PublisherView, set by the composition root when there is one

    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid value')}"
        return JSONResponse({"error": {"code": ErrorCode.INVALID_INPUT.value, "message": message}}, 400)

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/loop")
    async def loop(request: Request) -> dict:
        """How long the event loop was held since ``POST /loop/reset`` (the probe runs only once reset)."""
        watch = getattr(request.app.state, "loop_watch", None)
        return watch.figures() if watch is not None else {"watching": False}

    @app.post("/loop/reset")
    async def loop_reset(request: Request) -> dict:
        """Start the event-loop probe if it is not running, and zero its figures."""
        watch = getattr(request.app.state, "loop_watch", None)
        if watch is None:
            raise NotFound("this control plane has no event-loop probe", resource="loop")
        watch.start()
        return watch.figures()

    @app.get("/clock")
    async def clock(control: Control) -> dict:
        return clock_json(control.clock.state())

    @app.post("/clock/pause")
    async def pause(control: Control) -> dict:
        return clock_json(control.pause())

    @app.post("/clock/resume")
    async def resume(control: Control) -> dict:
        return clock_json(control.resume())

    @app.put("/clock/speed")
    async def speed(body: SpeedBody, control: Control) -> dict:
        return clock_json(control.set_speed(body.speed))

    @app.put("/clock/mode")
    async def mode(body: ModeBody, control: Control) -> dict:
        """``step``: time moves only when advanced; ``realtime``: it follows the wall clock."""
        return clock_json(has(control, "set_mode", "clock modes").set_mode(body.mode))

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

    @app.get("/publisher")
    async def publisher_status(request: Request) -> dict:
        """The fleet publisher's delivery counters: produced, published, acknowledged (PUBACK),
        in flight, undelivered, buffered, dropped, reconnects."""
        if request.app.state.publisher is None:
            raise NotFound("the fleet is not published to a broker (twin run --publish-fleet-to)")
        return request.app.state.publisher.status()

    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=console.STATIC), name="static")
    return app
